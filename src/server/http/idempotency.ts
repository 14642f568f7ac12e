import type { Context } from 'hono';
import { HttpError } from './errors.js';

/** The request's `Idempotency-Key` header (at most 200 characters, else 400), or undefined when absent or empty. */
export function idempotencyKey(c: Context): string | undefined {
  const key = c.req.header('Idempotency-Key');
  if (key === undefined || key === '') return undefined;
  if (key.length > 200) throw new HttpError(400, 'INVALID_HEADER', 'Header "Idempotency-Key" must be at most 200 characters');
  return key;
}
