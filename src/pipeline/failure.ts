import { isSandboxError } from '../sandbox/errors.js';

/** Why a node (or the whole run) failed. */
export class PipelineFailure extends Error {
  constructor(
    readonly code: string,
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
  if (error instanceof PipelineFailure) return error;
  if (isSandboxError(error)) return new PipelineFailure(error.code === 'GUEST_ERROR' ? guestCode : error.code, error.errorType, error.message, error.fatal);
  const e = error as { name?: unknown; message?: unknown; code?: unknown; status?: unknown };
  const type = typeof e?.name === 'string' && e.name !== 'Error' ? e.name : 'FunctionError';
  let message = typeof e?.message === 'string' ? e.message : String(error);
  if (typeof e?.code === 'string' && !message.includes(e.code)) message = `${e.code}: ${message}`;
  return new PipelineFailure('FUNCTION_FAILED', type, message);
}
