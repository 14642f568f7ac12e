import type { Context } from 'hono';
import { DEFAULT_SERVER_LIMITS, type ServerLimits } from '../context.js';
import { HttpError } from './errors.js';
import { checkNesting } from './nesting.js';

/** The server's limits (set on every /v1 request by app.ts), or the defaults. */
export function limitsOf(c: Context): ServerLimits {
  return (c.get('limits') as ServerLimits | undefined) ?? DEFAULT_SERVER_LIMITS;
}

/**
 * Reads a JSON request body. Malformed JSON is a 400 that says where it broke;
 * an empty body is `undefined` (or a 400 when `required`). A body nested deeper than `limits.bodyDepth`
 * is a 400 NESTING_TOO_DEEP (V8's JSON.parse itself is iterative and takes millions of levels; what comes
 * after it, validation, sift, mingo, JSON.stringify, recurses).
 */
export async function readJson<T = unknown>(c: Context, options: { required?: boolean } = {}): Promise<T> {
  const text = await c.req.text();
  if (text.trim() === '') {
    if (options.required) throw new HttpError(400, 'INVALID_JSON', 'The request body is empty; a JSON body is required');
    return undefined as T;
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (error) {
    throw new HttpError(400, 'INVALID_JSON', `The request body is not valid JSON: ${(error as Error).message}`);
  }
  checkNesting(body, limitsOf(c).bodyDepth, 'The request body', 'bodyDepth');
  return body as T;
}

/** Reads a JSON body that must be an object. */
export async function readJsonObject(c: Context, options: { required?: boolean } = { required: true }): Promise<Record<string, unknown>> {
  const body = await readJson(c, options);
  if (body === undefined && !options.required) return {};
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new HttpError(400, 'INVALID_BODY', 'The request body must be a JSON object');
  return body as Record<string, unknown>;
}
