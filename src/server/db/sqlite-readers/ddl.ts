/**
 * Runs one slow DDL statement (an index build) on a thread of its own, with its own writable connection to the
 * database file, so the main thread keeps answering while SQLite builds (docs/sql.md, "Indexes"). The thread is
 * the reader threads' entry (thread.ts) started in its `ddl` mode: it opens the file, runs the statement, answers
 * and ends. The caller holds the main connection's write lock meanwhile (sqlite.ts `slowDdl`): SQLite allows one
 * writer, and a write on the main connection would wait for the build synchronously.
 */
import { Worker } from 'node:worker_threads';
import { threadExecArgv } from '../../../pipeline/thread-argv.js';
import { READER_ENTRY } from './entry-url.js';
import type { FromDdl, ReaderThreadData } from './protocol.js';

export function runDdlOffThread(file: string, sql: string, entry: URL = READER_ENTRY): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let settled = false;
    const settle = (error?: Error) => {
      if (settled) return;
      settled = true;
      if (error) reject(error);
      else resolve();
    };
    let worker: Worker;
    try {
      worker = new Worker(entry, {
        name: 'in-app-runtime sqlite index build',
        workerData: { file, ddl: sql } satisfies ReaderThreadData,
        execArgv: threadExecArgv(process.execArgv),
      });
    } catch (error) {
      return reject(error);
    }
    worker.on('message', (message: FromDdl) => {
      if (message.type !== 'ddl') return;
      settle(message.ok ? undefined : Object.assign(new Error(message.error.message), { code: message.error.code }));
    });
    worker.on('error', (error) => settle(error));
    worker.on('exit', (code) => settle(new Error(`The index build thread ended (exit code ${code}) before it answered`)));
  });
}
