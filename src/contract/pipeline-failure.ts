import { PipelineFailure } from '../sandbox/errors.js';

export { PipelineFailure };

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
