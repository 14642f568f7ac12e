/**
 * The engine's one failure class (issue 17, "one error family"): what the sandbox throws and what the pipeline
 * engine reports are the same `PipelineFailure`. The sandbox classifies a failure by `code` (TIMEOUT,
 * OUT_OF_MEMORY, STACK_OVERFLOW, ABORTED, NEVER_SETTLES, SANDBOX_CRASHED, or GUEST_ERROR for an error thrown by
 * guest code, which the engine then reports as FUNCTION_FAILED or EXPRESSION_FAILED: src/pipeline/failure.ts).
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
