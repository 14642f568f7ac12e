/**
 * Entry of a SQLite reader thread (`worker_threads`, pool.ts): its own read-only better-sqlite3 connection to
 * the database file, running the statements of `Database.bounded` reads, each read in one read transaction (one
 * snapshot: BEGIN before its first statement, COMMIT at its `end`). WAL lets it read beside the main
 * connection's writes. Built as dist/server/sqlite-reader-thread.mjs; from src/ it starts through dev-thread.mjs.
 * Started with `ddl` (ddl.ts) it is not a reader: it runs that one statement on a writable connection and ends.
 */
import BetterSqlite3 from 'better-sqlite3';
import { parentPort, workerData } from 'node:worker_threads';
import { statementCache } from '../sqlite-statements.js';
import { defineSqliteFunctions, type ArmedBudget } from '../sqlite-functions.js';
import { StatementTimeout, isStatementTimeout } from '../statement-budget.js';
import type { FromDdl, FromReader, ReaderError, ReaderThreadData, ToReader } from './protocol.js';

if (!parentPort) throw new Error('sqlite-reader-thread: not started as a worker thread');
const port = parentPort;
const { file, ddl } = workerData as ReaderThreadData;

const errorOf = (error: unknown, code?: string): ReaderError => {
  const e = error as { message?: unknown; code?: unknown };
  return { message: String(e?.message ?? error), code: code ?? (typeof e?.code === 'string' ? e.code : undefined) };
};

if (ddl !== undefined) runDdl(ddl);
else serveReads();

/** `ddl` mode: the statement on a writable connection of its own, one answer, then the thread ends. */
function runDdl(sql: string): void {
  let answer: FromDdl;
  try {
    const db = new BetterSqlite3(file, { fileMustExist: true });
    try {
      db.pragma('busy_timeout = 5000');
      db.exec(sql);
    } finally {
      db.close();
    }
    answer = { type: 'ddl', ok: true };
  } catch (error) {
    answer = { type: 'ddl', ok: false, error: errorOf(error) };
  }
  port.postMessage(answer);
  port.close();
}

function serveReads(): void {
  const db = new BetterSqlite3(file, { readonly: true, fileMustExist: true });
  db.pragma('busy_timeout = 5000');
  let armed: ArmedBudget | null = null;
  defineSqliteFunctions(db, () => armed);

  const prepare = statementCache(db);

  /** As the main connection's plain statements (sqlite.ts): `all` and `get` of a non-reader run it. */
  function execute(message: Extract<ToReader, { type: 'statement' }>): unknown {
    const s = prepare(message.sql);
    const params = message.params as unknown[];
    if (s.reader) {
      if (message.method === 'all') return s.all(...params);
      if (message.method === 'get') return s.get(...params);
      s.all(...params);
      return { changes: 0 };
    }
    const { changes } = s.run(...params);
    return message.method === 'all' ? [] : message.method === 'get' ? undefined : { changes };
  }

  const post = (message: FromReader) => port.postMessage(message);

  port.on('message', (message: ToReader) => {
    if (message.type === 'end') {
      if (db.inTransaction) db.exec('COMMIT');
      return;
    }
    let answer: FromReader;
    try {
      if (Date.now() > message.deadline) throw new StatementTimeout(message.timeoutMs);
      if (!db.inTransaction) db.exec('BEGIN');
      armed = { deadline: message.deadline, timeoutMs: message.timeoutMs };
      answer = { type: 'result', id: message.id, ok: true, value: execute(message) };
    } catch (error) {
      answer = { type: 'result', id: message.id, ok: false, error: errorOf(error, isStatementTimeout(error) ? 'STATEMENT_TIMEOUT' : undefined) };
    } finally {
      armed = null;
    }
    try {
      post(answer);
    } catch (error) {
      post({ type: 'result', id: message.id, ok: false, error: { message: `The rows cannot be passed to the main thread: ${(error as Error).message}` } });
    }
  });
  post({ type: 'ready' });
}
