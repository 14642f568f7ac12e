/** Helpers that turn run outcomes into log records (design §5). */
import type { LogMode } from '../../contract/actions.js';
import { failedResult } from '../../contract/run-info.js';
import type { RunOutcome } from '../../contract/pipeline.js';

export function failure(errorType: string, code: string, errorMessage: string, durationMs = 0): RunOutcome {
  return { ok: false, error: { errorType, code, errorMessage, trace: [] }, trace: [], durationMs };
}

export const byteLength = (value: unknown): number => {
  const text = JSON.stringify(value ?? null) ?? 'null';
  return typeof Buffer !== 'undefined' ? Buffer.byteLength(text) : new TextEncoder().encode(text).length;
};

/** A successful outcome whose result is over the limit becomes a failure. */
export function capResult(outcome: RunOutcome, resultBytes: number): RunOutcome {
  if (!outcome.ok) return outcome;
  let size: number;
  try {
    size = byteLength(outcome.result);
  } catch (error) {
    return { ...failure('ResultError', 'RESULT_NOT_SERIALIZABLE', `The result cannot be stored as JSON: ${(error as Error).message}`), trace: outcome.trace };
  }
  if (size > resultBytes)
    return { ...failure('ResultTooLargeError', 'RESULT_TOO_LARGE', `The result is ${size} bytes; the limit is ${resultBytes}`), trace: outcome.trace };
  return outcome;
}

export function logTypeOf(mode: LogMode, ok: boolean): 'app.action.completed' | 'app.task.completed' | 'app.task.failed' {
  if (!ok) return 'app.task.failed';
  return mode === 'scheduled' ? 'app.task.completed' : 'app.action.completed';
}

export function logResultOf(outcome: RunOutcome): unknown {
  return outcome.ok ? (outcome.result ?? null) : failedResult(outcome);
}
