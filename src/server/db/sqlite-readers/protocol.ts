/**
 * Messages between the SQLite reader pool (pool.ts, main thread) and a reader thread (thread.ts). The thread
 * answers `statement`s in the order they come; `end` ends the read transaction its first statement opened.
 */
import type { SqlValue } from '../database.js';

export type ReaderMethod = 'all' | 'get' | 'run';

export interface ReaderThreadData {
  /** The database file (opened read-only). */
  file: string;
}

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
