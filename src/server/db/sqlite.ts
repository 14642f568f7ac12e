import BetterSqlite3 from 'better-sqlite3';
import type { Database, KeptRows, KeptText, Queryable, RunResult, SqlValue, TextQuery, Transaction } from './database.js';
import { statementCache } from './sqlite-statements.js';
import { defineSqliteFunctions, type ArmedBudget } from './sqlite-functions.js';
import { runDdlOffThread } from './sqlite-readers/ddl.js';
import { startSqliteReaders, type SqliteReaders } from './sqlite-readers/pool.js';
import { StatementTimeout } from './statement-budget.js';

export interface SqliteDatabase extends Database {
  readonly dialect: 'sqlite';
  /**
   * Starts `threads` reader threads (sqlite-readers/pool.ts) that run `bounded` reads from now on, off the main
   * thread. Only for a database file: in memory (or with 0 threads) `bounded` reads stay on the main connection.
   * Called once, when the server starts (after migrations); `close()` stops them.
   */
  startReaders(threads: number): Promise<void>;
  /** Reader threads alive now (empty before startReaders and after close). */
  readerThreads(): { threadId: number; busy: boolean }[];
  /**
   * Runs a DDL statement that takes long (an index build). On a database file it runs on a thread of its own
   * (sqlite-readers/ddl.ts) while it holds the write lock: transactions and statements that write wait for it
   * (SQLite has one writer), statements that only read go on, on this connection and on the reader threads. In
   * memory it runs here, as any statement: the whole process waits for it.
   */
  slowDdl(sql: string): Promise<void>;
}

/**
 * SQLite adapter (better-sqlite3, WAL). better-sqlite3 is synchronous; the
 * async interface is kept so a networked engine fits the same shape. A
 * transaction holds a lock so that work of other requests, started while the
 * transaction awaits, runs after it and not inside it.
 *
 * `bounded` runs on the reader threads once they are started (startReaders: a file database), else here: it
 * arms a deadline while each of its statements runs (synchronously, so no other statement runs meanwhile); the
 * SQL function SQLITE_BUDGET_FUNCTION, called from inside the scans (statement-budget.ts), throws past it, which
 * aborts the statement. The reader threads do the same on their own connections.
 */
export function openSqlite(options: { file?: string; memory?: boolean }): SqliteDatabase {
  const file = options.memory || !options.file ? undefined : options.file;
  const db = new BetterSqlite3(file ?? ':memory:');
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');

  const prepare = statementCache(db);
  const params = (p?: readonly SqlValue[]) => (p ?? []) as unknown[];

  let armed: ArmedBudget | null = null;
  defineSqliteFunctions(db, () => armed);
  let readers: SqliteReaders | undefined;
  let closing: Promise<void> | undefined;

  const direct: Queryable = {
    async all<T>(sql: string, p?: readonly SqlValue[]) {
      const s = prepare(sql);
      return (s.reader ? s.all(...params(p)) : (s.run(...params(p)), [])) as T[];
    },
    async get<T>(sql: string, p?: readonly SqlValue[]) {
      const s = prepare(sql);
      if (!s.reader) {
        s.run(...params(p));
        return undefined;
      }
      return s.get(...params(p)) as T | undefined;
    },
    async run(sql: string, p?: readonly SqlValue[]): Promise<RunResult> {
      const s = prepare(sql);
      if (s.reader) {
        s.all(...params(p));
        return { changes: 0 };
      }
      return { changes: s.run(...params(p)).changes };
    },
  };

  // A FIFO lock: a transaction takes it for its whole length; plain statements
  // issued outside a transaction wait for it too.
  let tail: Promise<void> = Promise.resolve();
  let locked = false;
  const withLock = <T>(fn: () => Promise<T>): Promise<T> => {
    const previous = tail;
    let release!: () => void;
    tail = new Promise((resolve) => (release = resolve));
    return previous.then(async () => {
      locked = true;
      try {
        return await fn();
      } finally {
        locked = false;
        release();
      }
    });
  };
  /** A slow DDL statement runs on a thread of its own, holding the lock (slowDdl). */
  let building = false;
  /**
   * While it does, a statement that only reads need not wait: no transaction of this connection is open. Only a query
   * that returns rows and writes nothing (better-sqlite3 `reader` and `readonly`), and no PRAGMA: `readonly` alone
   * is also true of BEGIN, COMMIT, SAVEPOINT or ATTACH, and `PRAGMA optimize` may write (found by review).
   */
  const readsBeside = (sql: string) => {
    if (!building || /^\s*pragma\b/i.test(sql)) return false;
    try {
      const statement = prepare(sql);
      return statement.reader && statement.readonly;
    } catch {
      return false;
    }
  };
  const outside = <K extends keyof Queryable>(key: K): Queryable[K] =>
    ((...args: Parameters<Queryable[K]>) =>
      locked && !readsBeside(args[0])
        ? withLock(() => (direct[key] as (...a: unknown[]) => Promise<unknown>)(...args))
        : (direct[key] as (...a: unknown[]) => Promise<unknown>)(...args)) as Queryable[K];

  /**
   * After the transaction, a statement of kept rows waits for the one running (if any), like a plain statement; not
   * for a slow DDL statement (it reads or drops a TEMP table, which takes no lock on the database).
   */
  const afterwards = <T>(fn: () => T): Promise<T> => (locked && !building ? withLock(async () => fn()) : (async () => fn())());

  // Kept rows are copied into a TEMP table (private to this connection, untouched by later writes), in the
  // query's order: its rowids are 1, 2, … in that order, so a page is a rowid range.
  let kept = 0;
  /** Copies the rows of `sql` into a new TEMP table; `read(table, from, count)` reads a page; dropped when closed. */
  const keepTable = async <P>(
    sql: string,
    p: readonly SqlValue[] | undefined,
    read: (table: string, from: number, count: number) => { page: P; rows: number },
  ) => {
    const table = `temp.kept_rows_${++kept}`;
    db.prepare(`CREATE TABLE ${table} AS ${sql}`).run(...params(p));
    let done = 0;
    let closed = false;
    const close = () =>
      afterwards(() => {
        if (closed || !db.open) return;
        closed = true;
        db.exec(`DROP TABLE IF EXISTS ${table}`);
      });
    return {
      async next(count: number): Promise<P | undefined> {
        const result = await afterwards(() => (closed ? undefined : read(table, done, count)));
        done += result?.rows ?? 0;
        // The last rows go first: the table is dropped right after (dropping 60 MB takes tens of ms).
        if (!result || result.rows < count) setImmediate(() => close().catch(() => undefined));
        return result?.page;
      },
      close,
    };
  };
  const keep = async <T extends readonly unknown[]>(sql: string, p?: readonly SqlValue[]): Promise<KeptRows<T>> => {
    let page: BetterSqlite3.Statement | undefined;
    const rows = await keepTable(sql, p, (table, from, count) => {
      page ??= db.prepare(`SELECT * FROM ${table} WHERE rowid > ? AND rowid <= ? ORDER BY rowid`).raw(true);
      const found = page.all(from, from + count) as T[];
      return { page: found, rows: found.length };
    });
    return { next: async (count) => (await rows.next(count)) ?? [], close: rows.close };
  };
  // A page of text is computed and joined by SQLite (`group_concat`, in rowid order) and read as one BLOB: one Buffer,
  // no string per row. The TEMP table keeps the query's columns (a smaller copy than the texts).
  const keepText = async (query: TextQuery): Promise<KeptText> => {
    let page: BetterSqlite3.Statement | undefined;
    return keepTable(`SELECT ${query.columns} ${query.from}`, query.params, (table, from, count) => {
      page ??= db
        .prepare(
          `WITH page AS (SELECT rowid AS kept_n, * FROM ${table} WHERE rowid > ? AND rowid <= ?) SELECT count(*), CAST(? || group_concat(${query.text}, ',' ORDER BY kept_n) AS BLOB) FROM page`,
        )
        .raw(true);
      const [rows, text] = page.get(from, from + count, from === 0 ? '' : ',') as [number, Buffer | null];
      return { page: text ?? undefined, rows };
    });
  };
  const inTransaction: Transaction = { ...direct, keep, keepText };

  function transaction<T>(fn: (tx: Transaction) => Promise<T>): Promise<T> {
    return withLock(async () => {
      db.exec('BEGIN IMMEDIATE');
      try {
        const result = await fn(inTransaction);
        db.exec('COMMIT');
        return result;
      } catch (error) {
        if (db.inTransaction) db.exec('ROLLBACK');
        throw error;
      }
    });
  }

  /** Runs one statement of `bounded` (after the lock, like a plain statement) with its deadline armed. */
  const armedFor = <T>(deadline: number, timeoutMs: number, sql: string, fn: () => Promise<T>): Promise<T> => {
    const run = async () => {
      if (Date.now() > deadline) throw new StatementTimeout(timeoutMs);
      armed = { deadline, timeoutMs };
      try {
        // direct's functions run the statement synchronously (before they return their promise): disarmed
        // right after it, before any other code runs.
        return fn();
      } finally {
        armed = null;
      }
    };
    return locked && !readsBeside(sql) ? withLock(run) : run();
  };

  return {
    dialect: 'sqlite',
    all: outside('all'),
    get: outside('get'),
    run: outside('run'),
    bounded<T>(timeoutMs: number, fn: (q: Queryable) => Promise<T>): Promise<T> {
      if (readers) return readers.bounded(timeoutMs, fn);
      const deadline = Date.now() + timeoutMs;
      return fn({
        all: (sql, p) => armedFor(deadline, timeoutMs, sql, () => direct.all(sql, p)),
        get: (sql, p) => armedFor(deadline, timeoutMs, sql, () => direct.get(sql, p)),
        run: (sql, p) => armedFor(deadline, timeoutMs, sql, () => direct.run(sql, p)),
      });
    },
    // The single writer already runs every transaction alone: the key adds nothing.
    lockedTransaction: (_key, fn) => transaction(fn),
    transaction,
    async startReaders(threads: number) {
      if (readers) throw new Error('startReaders: the reader threads are already started');
      if (closing) throw new Error('startReaders: the database is closed');
      if (!file || threads <= 0) return;
      readers = await startSqliteReaders({ file, size: threads });
    },
    readerThreads: () => readers?.threads() ?? [],
    async slowDdl(sql: string) {
      if (!file) {
        await outside('run')(sql);
        return;
      }
      await withLock(async () => {
        if (closing) throw new Error('The database is closed');
        building = true;
        try {
          await runDdlOffThread(file, sql);
        } finally {
          building = false;
        }
      });
    },
    close() {
      closing ??= (async () => {
        const stopping = readers;
        readers = undefined;
        await stopping?.close();
        await withLock(async () => db.close());
      })();
      return closing;
    },
  };
}
