/**
 * Messages between the SQLite reader pool (pool.ts, main thread) and a reader thread (thread.ts). The thread
 * answers `statement`s in the order they come; `end` ends the read transaction its first statement opened.
 */
import type { SqlValue } from '../database.js';

export type ReaderMethod = 'all' | 'get' | 'run';

export interface ReaderThreadData {
  /** The database file (opened read-only, except in `ddl` mode). */
  file: string;
  /**
   * `ddl` mode (ddl.ts): the thread opens the file writable, runs this one statement (an index build), answers
   * `FromDdl` and ends. Without it the thread is a reader.
   */
  ddl?: string;
}

/** The answer of a thread started in `ddl` mode. */
export type FromDdl = { type: 'ddl'; ok: true } | { type: 'ddl'; ok: false; error: ReaderError };

export type ToReader =
  | {
      type: 'statement';
      id: number;
      method: ReaderMethod;
      sql: string;
      params: readonly SqlValue[];
      /** Date.now() past which the statement throws StatementTimeout (SQLITE_BUDGET_FUNCTION). */
      deadline: number;
      timeoutMs: number;
    }
  | { type: 'end' };

export interface ReaderError {
  message: string;
  /** SQLite's code (`SQLITE_ERROR`, …) or STATEMENT_TIMEOUT. */
  code?: string;
}

export type FromReader =
  | { type: 'ready' }
  | { type: 'result'; id: number; ok: true; value: unknown }
  | { type: 'result'; id: number; ok: false; error: ReaderError };
