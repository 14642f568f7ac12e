import pg from 'pg';
import type { Database, KeptRows, KeptText, Queryable, RunResult, SqlValue, TextQuery, Transaction, TransactionOptions } from './database.js';
import { PG_QUERY_CANCELED, StatementTimeout } from './statement-budget.js';
import { identitySequenceSql, syncIdentitySql, translateToPostgres, type TranslatedSql } from './sql-dialect.js';

/**
 * PostgreSQL adapter (node-postgres pool) of the data-access layer, for
 * several backend instances sharing one database (design §8).
 *
 * - The portable SQL of the stores is translated once per distinct string
 *   (sql-dialect.ts) and cached.
 * - `int8` and `numeric` results are JS numbers (as SQLite gives them).
 * - `transaction(fn)` runs on one pooled client at SERIALIZABLE isolation, so
 *   the result is that of some serial order, as with SQLite's single writer.
 *   A serialization failure or deadlock rolls back and runs `fn` again (with
 *   backoff): keep side effects that are not database writes out of `fn`.
 * - `lockedTransaction(key, fn)` runs at READ COMMITTED after `pg_advisory_xact_lock(key)`: holders of
 *   one key queue instead of failing to serialize.
 * - Plain statements outside a transaction are autocommitted (READ COMMITTED);
 *   a deadlock there is retried too.
 * - `bounded(ms, fn)` runs `fn`'s reads in a READ ONLY, READ COMMITTED transaction whose `statement_timeout`
 *   (SET LOCAL: it ends with the transaction) is the time left before each statement; a cancelled statement
 *   (57014) is rolled back with its transaction and the connection goes back to the pool as usual.
 */
export interface PostgresDatabase extends Database {
  readonly dialect: 'postgres';
  /**
   * Runs `fn` while holding a cluster-wide advisory lock named `key` (a
   * session lock on a dedicated connection; `fn` uses the pool as usual).
   */
  withAdvisoryLock<T>(key: string, fn: () => Promise<T>): Promise<T>;
  /** PostgreSQL-only SQL, sent untranslated (`$n` placeholders). */
  query<T = Record<string, unknown>>(text: string, params?: readonly SqlValue[]): Promise<T[]>;
  /**
   * Cuts every connection at once without waiting for work in progress (open
   * transactions are rolled back by the server) and refuses later calls: how a
   * crashed instance looks to the others.
   */
  terminate(): Promise<void>;
}

export interface PostgresOptions {
  /** `postgres://user:password@host:port/database` */
  url: string;
  /** Pool size (default 10). */
  max?: number;
  /** Shown in `pg_stat_activity` (default `in-app-runtime`). */
  applicationName?: string;
  /** Attempts of a transaction that keeps failing to serialize (default 30). */
  maxAttempts?: number;
  /**
   * Session settings of every connection (`SET key = value`), e.g. custom `iar.*` settings read by column defaults.
   * Defaults: `jit: 'off'` (see SESSION_DEFAULTS); a value given here wins, also over the URL's `?options=` or
   * `PGOPTIONS` (which are kept: `connectionOptions`).
   */
  settings?: Record<string, string | number>;
}

const RETRYABLE = new Set(['40001', '40P01']);
export const isRetryablePgError = (error: unknown) => typeof error === 'object' && error !== null && RETRYABLE.has((error as { code?: string }).code ?? '');

const parseNumber = (value: string) => Number(value);
const INT8 = 20;
const NUMERIC = 1700;
const typeParsers: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: string) => {
    if ((oid === INT8 || oid === NUMERIC) && format !== 'binary') return parseNumber;
    return pg.types.getTypeParser(oid, format as 'text');
  }) as pg.CustomTypesConfig['getTypeParser'],
};

function toParam(value: SqlValue | boolean | undefined): unknown {
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'boolean') return value ? 1 : 0;
  if (value === undefined) return null;
  return value;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Session settings every connection starts with. `jit = off`: the translated data source statements (docs/sql.md)
 * are long expressions over jsonb whose cost the planner cannot estimate (no statistics on JSON paths, one table
 * shared by every data source), so most of them passed `jit_above_cost` and PostgreSQL compiled them with LLVM
 * before running them: 45 generated selects over a 470-entry data source took 25.3 s with JIT, 0.45 s without
 * (56x; 36 of them compiled; 2026-11-27, a loaded 2-core machine, docs/sql.md). A tenant's read touches few rows,
 * so compiling never pays back. `bounded` reads set it per transaction already; this covers every other statement.
 */
export const SESSION_DEFAULTS: Readonly<Record<string, string>> = { jit: 'off' };

/** `-c key=value` command-line options of a connection (spaces and backslashes escaped). */
const commandLine = (settings: Readonly<Record<string, string | number>>) =>
  Object.entries(settings).map(([key, value]) => `-c ${key}=${String(value).replace(/[\s\\]/g, (c) => `\\${c}`)}`);

/**
 * The connection's `options` and the URL to connect with: the session defaults, then the options the deployment
 * gave (the URL's `?options=`, else the `PGOPTIONS` environment variable), then `settings`; PostgreSQL applies them
 * in order, so a later one wins. node-postgres takes one `options` string, and a URL's replaces the one passed
 * beside it, so the URL's is taken out of the URL and merged here.
 */
export function connectionOptions(url: string, settings: Readonly<Record<string, string | number>> = {}, env = process.env.PGOPTIONS) {
  let given = env;
  let connectionString = url;
  try {
    const parsed = new URL(url);
    const fromUrl = parsed.searchParams.get('options');
    if (fromUrl !== null) {
      given = fromUrl;
      parsed.searchParams.delete('options');
      connectionString = parsed.toString();
    }
  } catch {
    /* not a URL: node-postgres reports it when it connects */
  }
  const defaults = Object.fromEntries(Object.entries(SESSION_DEFAULTS).filter(([key]) => !Object.hasOwn(settings, key)));
  const parts = [...commandLine(defaults), ...(given?.trim() ? [given.trim()] : []), ...commandLine(settings)];
  return { connectionString, options: parts.join(' ') };
}

export function openPostgres(options: PostgresOptions): PostgresDatabase {
  const connection = connectionOptions(options.url, options.settings);
  const pool = new pg.Pool({
    connectionString: connection.connectionString,
    max: options.max ?? 10,
    application_name: options.applicationName ?? 'in-app-runtime',
    types: typeParsers,
    idleTimeoutMillis: 30_000,
    options: connection.options,
  });
  const clients = new Set<pg.PoolClient>();
  pool.on('connect', (client) => {
    clients.add(client);
    client.on('end', () => clients.delete(client));
    client.on('error', () => undefined);
  });
  pool.on('error', (error) => {
    if (!dead) console.error('[in-app-runtime server] idle PostgreSQL connection failed', error.message);
  });
  const maxAttempts = options.maxAttempts ?? 30;
  let dead = false;
  const alive = () => {
    if (dead) throw Object.assign(new Error('The database connection was terminated'), { code: 'DB_TERMINATED' });
  };

  const cache = new Map<string, TranslatedSql>();
  const translate = (sql: string) => {
    let t = cache.get(sql);
    if (!t) {
      t = translateToPostgres(sql);
      cache.set(sql, t);
      if (cache.size > 1000) cache.delete(cache.keys().next().value!);
    }
    return t;
  };

  /** Identity sequence of each table that got explicit ids (null: the table has none). */
  const sequences = new Map<string, string | null>();
  type Runner = Pick<pg.Pool, 'query'> | pg.PoolClient;
  const exec = async (runner: Runner, sql: string, params?: readonly SqlValue[]) => {
    alive();
    const t = translate(sql);
    const result = await runner.query({ text: t.text, values: (params ?? []).map(toParam) });
    if (t.explicitIdTable) {
      const table = t.explicitIdTable;
      if (!sequences.has(table)) sequences.set(table, ((await runner.query(identitySequenceSql(table))).rows[0]?.seq as string | null) ?? null);
      const seq = sequences.get(table);
      if (seq) await runner.query(syncIdentitySql(table), [seq]);
    }
    return result;
  };

  const queryable = (runner: Runner, onError?: (error: unknown) => void): Queryable => {
    const guarded = async (sql: string, params?: readonly SqlValue[]) => {
      try {
        return await exec(runner, sql, params);
      } catch (error) {
        onError?.(error);
        throw error;
      }
    };
    return {
      async all<T>(sql: string, params?: readonly SqlValue[]) {
        return (await guarded(sql, params)).rows as T[];
      },
      async get<T>(sql: string, params?: readonly SqlValue[]) {
        return (await guarded(sql, params)).rows[0] as T | undefined;
      },
      async run(sql: string, params?: readonly SqlValue[]): Promise<RunResult> {
        return { changes: (await guarded(sql, params)).rowCount ?? 0 };
      },
    };
  };

  /** Autocommitted statements: a deadlock victim is simply sent again. */
  const withRetry = async <T>(fn: () => Promise<T>): Promise<T> => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await fn();
      } catch (error) {
        if (!isRetryablePgError(error) || attempt >= maxAttempts || dead) throw error;
        await sleep(Math.min(200, 2 ** attempt) * Math.random());
      }
    }
  };
  const direct = queryable(pool);

  let keptCount = 0;

  /**
   * One attempt of a transaction on its own pooled client: the opening statements, `fn`, COMMIT; ROLLBACK on any error.
   * Rows kept by `tx.keep` are a `WITH HOLD` cursor of this client (materialized by PostgreSQL at COMMIT): the client
   * goes back to the pool when the last of them is closed.
   */
  async function inTransaction<T>(opening: readonly (readonly [string, unknown[]?])[], fn: (tx: Transaction) => Promise<T>): Promise<T> {
    alive();
    const client = await pool.connect();
    // A failed statement aborts a PostgreSQL transaction: remember it, so a
    // caller that caught the error cannot commit (COMMIT would silently roll back).
    let failure: unknown;
    let broken = false;
    let ended = false;
    let rolledBack = false;
    let released = false;
    const cursors = new Set<string>();
    const release = (destroy: boolean) => {
      if (released) return;
      released = true;
      client.release(destroy || dead);
    };
    /** Declares a `WITH HOLD` cursor of `sql`; `next` fetches `count` rows as arrays; closed at the end. */
    const declare = async (sql: string, params?: readonly SqlValue[]) => {
      alive();
      const name = `kept_rows_${++keptCount}`;
      try {
        await client.query({ text: `DECLARE ${name} NO SCROLL CURSOR WITH HOLD FOR ${translate(sql).text}`, values: (params ?? []).map(toParam) });
      } catch (error) {
        failure ??= error;
        throw error;
      }
      cursors.add(name);
      const close = async (destroy = false) => {
        if (!cursors.delete(name)) return;
        if (!destroy) await client.query(`CLOSE ${name}`).catch(() => (destroy = true));
        if (ended && (destroy || cursors.size === 0)) release(destroy);
      };
      return {
        async next<R>(count: number): Promise<R[]> {
          if (rolledBack) throw new Error('The kept rows are gone: their transaction rolled back');
          if (!cursors.has(name)) return [];
          let rows: R[];
          try {
            rows = (await client.query({ text: `FETCH FORWARD ${Math.max(1, Math.floor(count))} FROM ${name}`, rowMode: 'array' })).rows as unknown as R[];
          } catch (error) {
            await close(true);
            throw error;
          }
          if (rows.length < count) await close();
          return rows;
        },
        close: () => close(),
      };
    };
    const keep = async <R extends readonly unknown[]>(sql: string, params?: readonly SqlValue[]): Promise<KeptRows<R>> => {
      const cursor = await declare(sql, params);
      return { next: (count) => cursor.next<R>(count), close: cursor.close };
    };
    // The rows of a FETCH come as strings: each is written into the page's Buffer (concatenating them first would
    // make a rope that encoding has to flatten, ≈ 3x slower).
    const keepText = async (query: TextQuery): Promise<KeptText> => {
      const cursor = await declare(`SELECT ${query.text} ${query.from}`, query.params);
      let first = true;
      return {
        async next(count) {
          const rows = await cursor.next<[string]>(count);
          if (rows.length === 0) return undefined;
          let bytes = first ? rows.length - 1 : rows.length;
          for (let i = 0; i < rows.length; i++) bytes += Buffer.byteLength(rows[i]![0]);
          const page = Buffer.allocUnsafe(bytes);
          let at = 0;
          for (let i = 0; i < rows.length; i++) {
            if (i > 0 || !first) page[at++] = 0x2c; // ','
            at += page.write(rows[i]![0], at);
          }
          first = false;
          return page;
        },
        close: cursor.close,
      };
    };
    try {
      for (const [sql, params] of opening) await client.query(sql, params);
      const result = await fn({ ...queryable(client, (error) => (failure ??= error)), keep, keepText });
      if (failure !== undefined) throw failure;
      await client.query('COMMIT');
      return result;
    } catch (error) {
      // The cursors of a transaction that rolled back are gone.
      rolledBack = true;
      cursors.clear();
      try {
        await client.query('ROLLBACK');
      } catch {
        broken = true;
      }
      throw error;
    } finally {
      ended = true;
      if (broken || cursors.size === 0) release(broken);
    }
  }

  return {
    dialect: 'postgres',
    all: (sql, params) => withRetry(() => direct.all(sql, params)),
    get: (sql, params) => withRetry(() => direct.get(sql, params)),
    run: (sql, params) => withRetry(() => direct.run(sql, params)),
    async query<T>(text: string, params?: readonly SqlValue[]) {
      alive();
      return (await pool.query({ text, values: (params ?? []).map(toParam) })).rows as T[];
    },
    async transaction<T>(fn: (tx: Transaction) => Promise<T>, options: TransactionOptions = {}): Promise<T> {
      if (options.isolation === 'read-committed') return inTransaction([['BEGIN ISOLATION LEVEL READ COMMITTED']], fn);
      for (let attempt = 1; ; attempt++) {
        try {
          return await inTransaction([['BEGIN ISOLATION LEVEL SERIALIZABLE']], fn);
        } catch (error) {
          if (!isRetryablePgError(error) || attempt >= maxAttempts || dead) throw error;
          await sleep(Math.min(250, 2 ** attempt) * Math.random());
        }
      }
    },
    lockedTransaction<T>(key: string, fn: (tx: Queryable) => Promise<T>): Promise<T> {
      // READ COMMITTED: each statement after the lock sees what the previous holder committed.
      return inTransaction([['BEGIN ISOLATION LEVEL READ COMMITTED'], ['SELECT pg_advisory_xact_lock(hashtext($1))', [key]]], fn);
    },
    bounded<T>(timeoutMs: number, fn: (q: Queryable) => Promise<T>): Promise<T> {
      const deadline = Date.now() + timeoutMs;
      const budget = Math.max(1, Math.ceil(timeoutMs));
      // One round trip opens the transaction and sets the first statement's budget. JIT off: LLVM compiles a
      // large statement without checking for cancellation (a 100 KB `where` of 200 array walks overran a 500 ms
      // budget by 12–46 s while it compiled; 0.5 s without JIT).
      const opening = `BEGIN ISOLATION LEVEL READ COMMITTED READ ONLY; SET LOCAL statement_timeout = ${budget}; SET LOCAL jit = off`;
      return inTransaction([[opening]], (tx) => {
        let first = true;
        const timed = async <R>(statement: () => Promise<R>): Promise<R> => {
          const left = Math.ceil(deadline - Date.now());
          if (left <= 0) throw new StatementTimeout(timeoutMs);
          if (!first) await tx.run("SELECT set_config('statement_timeout', ?, true)", [String(left)]);
          first = false;
          try {
            return await statement();
          } catch (error) {
            if ((error as { code?: unknown }).code === PG_QUERY_CANCELED) throw new StatementTimeout(timeoutMs);
            throw error;
          }
        };
        return fn({
          all: (sql, params) => timed(() => tx.all(sql, params)),
          get: (sql, params) => timed(() => tx.get(sql, params)),
          run: (sql, params) => timed(() => tx.run(sql, params)),
        });
      });
    },
    async withAdvisoryLock<T>(key: string, fn: () => Promise<T>): Promise<T> {
      alive();
      const client = await pool.connect();
      try {
        await client.query('SELECT pg_advisory_lock(hashtext($1))', [key]);
        try {
          return await fn();
        } finally {
          await client.query('SELECT pg_advisory_unlock(hashtext($1))', [key]).catch(() => undefined);
        }
      } finally {
        client.release(dead);
      }
    },
    async terminate() {
      dead = true;
      for (const client of clients) (client as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
      await pool.end().catch(() => undefined);
    },
    async close() {
      if (dead) return;
      dead = true;
      await pool.end();
    },
  };
}
