/** Outcomes of device runs that fail before or after the engine (client.js and the lazy `runs` chunk both use them). */
import type { RunOutcome } from '../contract/pipeline.js';

export const failure = (errorType: string, code: string, errorMessage: string): RunOutcome => ({
  ok: false,
  error: { errorType, code, errorMessage, trace: [] },
  trace: [],
  durationMs: 0,
});

export const notSerializable = (error: unknown, trace: RunOutcome['trace']): RunOutcome => ({
  ...failure('ResultError', 'RESULT_NOT_SERIALIZABLE', `The result cannot be stored as JSON: ${(error as Error)?.message ?? String(error)}`),
  trace,
});
