/**
 * The SQLite reader pool: the statements of `Database.bounded` reads run on `worker_threads`, each thread with its
 * own read-only connection to the database file (thread.ts), so a slow read holds one reader thread, not the
 * main thread every request needs (docs/data-sources.md, "Time budgets").
 *
 * - A read takes a thread at its first statement and keeps it to its end: its statements run there in order, in
 *   one read transaction (one snapshot). Reads wait in line (first come, first served) when every thread is busy.
 * - Budget: the thread stops a statement past its deadline itself (SQLITE_BUDGET_FUNCTION, checked inside the
 *   scans) and answers StatementTimeout; the thread then goes back to the pool. One that has not answered
 *   `graceMs` after the deadline (work the checks do not reach: a sort) is terminated and replaced by a fresh one,
 *   and its caller answered StatementTimeout then.
 * - A thread that crashes fails the statements it was running (an Error, not StatementTimeout: the SQL path then
 *   leaves the read to the JS evaluator) and is replaced.
 */
import { Worker } from 'node:worker_threads';
import { threadExecArgv } from '../../../pipeline/thread-argv.js';
import type { Queryable, SqlValue } from '../database.js';
import { StatementTimeout } from '../statement-budget.js';
import { READER_ENTRY } from './entry-url.js';
import type { FromReader, ReaderError, ReaderMethod, ReaderThreadData, ToReader } from './protocol.js';

export interface SqliteReadersOptions {
  /** The database file (WAL mode, written by the main connection). */
  file: string;
  /** Threads (reads running at the same time). */
  size: number;
  /** How long past a read's deadline its thread may take to answer before it is terminated (default 1000 ms). */
  graceMs?: number;
  /** Where a thread starts (default: entry-url.ts). */
  entry?: URL;
}

export interface SqliteReaders {
  readonly size: number;
  /** Database.bounded on the reader threads. */
  bounded<T>(timeoutMs: number, fn: (q: Queryable) => Promise<T>): Promise<T>;
  /** Threads alive now (tests and diagnostics). */
  threads(): { threadId: number; busy: boolean }[];
  /** Terminates every thread; statements in flight fail. */
  close(): Promise<void>;
}

interface Pending {
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
  /** The caller has its answer (the thread's, or the failure of a discarded thread). */
  settled: boolean;
  timers: ReturnType<typeof setTimeout>[];
  timeoutMs: number;
}

interface Reader {
  worker: Worker;
  /** Statements posted and not answered yet. */
  pending: Map<number, Pending>;
  /** Held by a read (between its first statement and its end). */
  held: boolean;
  dead: boolean;
}

interface Waiter {
  take: (reader: Reader) => void;
  fail: (error: unknown) => void;
}

const readerError = (error: ReaderError, timeoutMs: number): Error =>
  error.code === 'STATEMENT_TIMEOUT' ? new StatementTimeout(timeoutMs) : Object.assign(new Error(error.message), { code: error.code });

/** Starts `options.size` reader threads; resolves once each has opened its connection (rejects if one cannot). */
export async function startSqliteReaders(options: SqliteReadersOptions): Promise<SqliteReaders> {
  const size = Math.max(1, Math.floor(options.size));
  const graceMs = options.graceMs ?? 1000;
  const readers = new Set<Reader>();
  const idle: Reader[] = [];
  const waiting: Waiter[] = [];
  /** Threads alive or starting. */
  let live = 0;
  let seq = 0;
  let closed = false;

  function spawn(): Promise<Reader> {
    live++;
    return new Promise<Reader>((resolve, reject) => {
      let worker: Worker;
      try {
        worker = new Worker(options.entry ?? READER_ENTRY, {
          name: 'in-app-runtime sqlite reader',
          workerData: { file: options.file } satisfies ReaderThreadData,
          execArgv: threadExecArgv(process.execArgv),
        });
      } catch (error) {
        live--;
        return reject(error);
      }
      const reader: Reader = { worker, pending: new Map(), held: false, dead: false };
      // Counted from now, so that close() stops a thread still starting too.
      readers.add(reader);
      let ready = false;
      worker.on('message', (message: FromReader) => {
        if (message.type === 'ready') {
          ready = true;
          return resolve(reader);
        }
        answer(reader, message);
      });
      const fail = (error: Error) => {
        if (!ready) {
          ready = true;
          discard(reader, error, false);
          return reject(error);
        }
        discard(reader, error);
      };
      worker.on('error', (error) => fail(new Error(`A SQLite reader thread crashed: ${error.message}`)));
      worker.on('exit', (code) => fail(new Error(`A SQLite reader thread exited (code ${code})`)));
    });
  }

  function answer(reader: Reader, message: Extract<FromReader, { type: 'result' }>): void {
    const pending = reader.pending.get(message.id);
    if (!pending) return;
    reader.pending.delete(message.id);
    for (const t of pending.timers) clearTimeout(t);
    if (!pending.settled) {
      pending.settled = true;
      if (message.ok) pending.resolve(message.value);
      else pending.reject(readerError(message.error, pending.timeoutMs));
    }
    release(reader);
  }

  /** A reader no read holds and with nothing running goes to the next waiting read, or back to idle. */
  function release(reader: Reader): void {
    if (reader.dead || reader.held || reader.pending.size > 0) return;
    if (closed) {
      discard(reader, new Error('The database is closed'));
      return;
    }
    const next = waiting.shift();
    if (next) next.take(reader);
    else idle.push(reader);
  }

  /**
   * Takes a thread out for good (crashed, past its grace, or closing): what it runs fails; a fresh thread replaces
   * one that was serving (`replace`: not for one that failed to start, whose caller decides).
   */
  function discard(reader: Reader, error: Error, replacement = true): void {
    if (reader.dead) return;
    reader.dead = true;
    live--;
    readers.delete(reader);
    const at = idle.indexOf(reader);
    if (at >= 0) idle.splice(at, 1);
    for (const pending of reader.pending.values()) {
      for (const t of pending.timers) clearTimeout(t);
      if (!pending.settled) {
        pending.settled = true;
        pending.reject(error);
      }
    }
    reader.pending.clear();
    void reader.worker.terminate().catch(() => undefined);
    if (!closed && replacement) replace();
  }

  /** Starts a thread in place of one that is gone; while none can start, waiting reads fail (the JS evaluator answers them). */
  function replace(): void {
    spawn().then(release, (error: unknown) => {
      if (closed) return;
      console.error('[in-app-runtime server] a SQLite reader thread could not start', error);
      if (live === 0) for (const waiter of waiting.splice(0)) waiter.fail(error);
    });
  }

  /** A free thread, held for the caller's read; the next one released when none is free; StatementTimeout if none is by the deadline. */
  function acquire(deadline: number, timeoutMs: number): Promise<Reader> {
    if (closed) return Promise.reject(new Error('The database is closed'));
    const free = idle.shift();
    if (free) {
      free.held = true;
      return Promise.resolve(free);
    }
    if (live < size) replace();
    return new Promise<Reader>((resolve, reject) => {
      const timer = setTimeout(
        () => {
          const at = waiting.indexOf(waiter);
          if (at >= 0) waiting.splice(at, 1);
          reject(new StatementTimeout(timeoutMs));
        },
        Math.max(0, deadline - Date.now() + 1),
      );
      const waiter: Waiter = {
        take: (reader) => {
          clearTimeout(timer);
          reader.held = true;
          resolve(reader);
        },
        fail: (error) => {
          clearTimeout(timer);
          reject(error);
        },
      };
      waiting.push(waiter);
    });
  }

  function statement(reader: Reader, method: ReaderMethod, sql: string, params: readonly SqlValue[] | undefined, deadline: number, timeoutMs: number) {
    if (Date.now() > deadline) return Promise.reject(new StatementTimeout(timeoutMs));
    if (reader.dead) return Promise.reject(new Error('The SQLite reader thread of this read has stopped'));
    const id = ++seq;
    return new Promise<unknown>((resolve, reject) => {
      const pending: Pending = { resolve, reject, settled: false, timers: [], timeoutMs };
      reader.pending.set(id, pending);
      const left = deadline - Date.now();
      // Answered when the thread answers (it stops the statement at the deadline), else StatementTimeout when
      // the thread is replaced. Not at the deadline itself: the thread would still be busy, and a client that
      // sends its next read once answered would find both threads taken by its own stopped reads.
      pending.timers.push(setTimeout(() => discard(reader, new StatementTimeout(timeoutMs)), left + graceMs));
      const message: ToReader = { type: 'statement', id, method, sql, params: params ?? [], deadline, timeoutMs };
      try {
        reader.worker.postMessage(message);
      } catch (error) {
        reader.pending.delete(id);
        for (const t of pending.timers) clearTimeout(t);
        pending.settled = true;
        reject(error);
      }
    });
  }

  const started = await Promise.allSettled(Array.from({ length: size }, () => spawn()));
  const failed = started.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  const ok = started.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  if (failed) {
    closed = true;
    await Promise.all(ok.map((r) => r.worker.terminate().catch(() => undefined)));
    throw failed.reason;
  }
  for (const reader of ok) release(reader);

  return {
    size,
    threads: () => [...readers].map((r) => ({ threadId: r.worker.threadId, busy: r.held || r.pending.size > 0 })),
    async bounded<T>(timeoutMs: number, fn: (q: Queryable) => Promise<T>): Promise<T> {
      const deadline = Date.now() + timeoutMs;
      let taking: Promise<Reader> | undefined;
      const take = () => (taking ??= acquire(deadline, timeoutMs));
      const run = async (method: ReaderMethod, sql: string, params?: readonly SqlValue[]) => statement(await take(), method, sql, params, deadline, timeoutMs);
      try {
        return await fn({
          all: (sql, params) => run('all', sql, params) as Promise<never[]>,
          get: (sql, params) => run('get', sql, params) as Promise<never>,
          run: (sql, params) => run('run', sql, params) as Promise<{ changes: number }>,
        });
      } finally {
        const reader = await taking?.catch(() => undefined);
        if (reader) {
          reader.held = false;
          // Ends the read transaction after the statements still running, in the thread's order.
          if (!reader.dead) reader.worker.postMessage({ type: 'end' } satisfies ToReader);
          release(reader);
        }
      }
    },
    async close() {
      if (closed) return;
      closed = true;
      const error = new Error('The database is closed');
      for (const waiter of waiting.splice(0)) waiter.fail(error);
      const all = [...readers];
      for (const reader of all) discard(reader, error);
      idle.length = 0;
      await Promise.all(all.map((r) => r.worker.terminate().catch(() => undefined)));
    },
  };
}
