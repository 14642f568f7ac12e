import type { Context } from 'hono';

/**
 * Every failure the backend answers with: `{ error: { code, message, ...details }, message }` (design §3); the
 * top-level `message` repeats `error.message` for integration clients that read `response.data.message`.
 */
export class HttpError extends Error {
  constructor(
    readonly status: 400 | 401 | 403 | 404 | 409 | 413 | 415 | 422 | 429 | 500 | 503,
    readonly code: string,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

export const badRequest = (message: string, details?: Record<string, unknown>) => new HttpError(400, 'INVALID_REQUEST', message, details);
export const notFound = (what: string) => new HttpError(404, 'NOT_FOUND', `${what} not found`);

export function errorBody(code: string, message: string, details?: Record<string, unknown>) {
  return { error: { code, message, ...(details ?? {}) }, message };
}

export function sendError(c: Context, error: unknown): Response {
  if (error instanceof HttpError) return c.json(errorBody(error.code, error.message, error.details), error.status);
  // Hono's own HTTPException (e.g. from bodyLimit) carries a status.
  const status = (error as { status?: number; getResponse?: unknown })?.status;
  if (typeof status === 'number' && status >= 400 && status < 500 && typeof (error as { getResponse?: unknown }).getResponse === 'function') {
    const code = status === 413 ? 'PAYLOAD_TOO_LARGE' : `HTTP_${status}`;
    return c.json(errorBody(code, (error as Error).message || 'Request refused'), status as 400);
  }
  // PostgreSQL "data exception" (SQLSTATE class 22): a value the database cannot hold, e.g. a NUL character in
  // text or a number past bigint. Input that slipped past validation: the caller's fault, nothing was written.
  const sqlState = (error as { code?: unknown; severity?: unknown })?.code;
  if (typeof sqlState === 'string' && /^22[0-9A-Z]{3}$/.test(sqlState) && (error as { severity?: unknown }).severity !== undefined)
    return c.json(errorBody('INVALID_REQUEST', `A value of the request cannot be stored: ${(error as Error).message}`), 400);
  console.error('[in-app-runtime server] unexpected error', error);
  return c.json(errorBody('INTERNAL', 'Internal server error'), 500);
}
