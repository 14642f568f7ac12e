/**
 * The engine's one failure class (issue 17, "one error family"): what the sandbox throws and what the pipeline
 * engine reports are the same `PipelineFailure`. The sandbox classifies a failure by `code` (TIMEOUT,
 * OUT_OF_MEMORY, STACK_OVERFLOW, ABORTED, NEVER_SETTLES, SANDBOX_CRASHED, or GUEST_ERROR for an error thrown by
 * guest code, which the engine then reports as FUNCTION_FAILED or EXPRESSION_FAILED: src/contract/pipeline-failure.ts).
 */
export class PipelineFailure extends Error {
  constructor(
    readonly code: string,
    /** The guest error's name (`TypeError`, …) or the engine's (`TimeoutError`, `OutOfMemoryError`, …). */
    readonly errorType: string,
    message: string,
    /** Fatal failures end the run whatever the node policies say (time, memory, cancellation). */
    readonly fatal = false,
  ) {
    super(message);
    this.name = 'PipelineFailure';
  }
}

/** Any thrown value as a PipelineFailure; `guestCode` is the code given to errors thrown by user code or expressions. */
export function toFailure(error: unknown, guestCode = 'FUNCTION_FAILED'): PipelineFailure {
  if (error instanceof PipelineFailure)
    return error.code === 'GUEST_ERROR' ? new PipelineFailure(guestCode, error.errorType, error.message, error.fatal) : error;
  const e = error as { name?: unknown; message?: unknown; code?: unknown; status?: unknown };
  const type = typeof e?.name === 'string' && e.name !== 'Error' ? e.name : 'FunctionError';
  let message = typeof e?.message === 'string' ? e.message : String(error);
  if (typeof e?.code === 'string' && !message.includes(e.code)) message = `${e.code}: ${message}`;
  return new PipelineFailure('FUNCTION_FAILED', type, message);
}
