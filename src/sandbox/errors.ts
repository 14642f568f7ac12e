/** A failure inside the sandbox, classified for the pipeline engine. */
export class SandboxError extends Error {
  constructor(
    /** TIMEOUT, OUT_OF_MEMORY, STACK_OVERFLOW, ABORTED, NEVER_SETTLES, SANDBOX_CRASHED, GUEST_ERROR */
    readonly code: string,
    /** The guest error's name (`TypeError`, …) or the engine's (`TimeoutError`, `OutOfMemoryError`, …). */
    readonly errorType: string,
    message: string,
    /** Fatal failures end the run whatever the node policies say. */
    readonly fatal: boolean,
  ) {
    super(message);
    this.name = 'SandboxError';
  }
}

export const isSandboxError = (value: unknown): value is SandboxError => value instanceof SandboxError;
