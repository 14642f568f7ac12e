import type { Context } from 'hono';
import { HttpError } from './errors.js';

/**
 * Reads a JSON request body. Malformed JSON is a 400 that says where it broke;
 * an empty body is `undefined` (or a 400 when `required`).
 */
export async function readJson<T = unknown>(c: Context, options: { required?: boolean } = {}): Promise<T> {
  const text = await c.req.text();
  if (text.trim() === '') {
    if (options.required) throw new HttpError(400, 'INVALID_JSON', 'The request body is empty; a JSON body is required');
    return undefined as T;
  }
  try {
    return JSON.parse(text) as T;
  } catch (error) {
    throw new HttpError(400, 'INVALID_JSON', `The request body is not valid JSON: ${(error as Error).message}`);
  }
}

/** Reads a JSON body that must be an object. */
export async function readJsonObject(c: Context, options: { required?: boolean } = { required: true }): Promise<Record<string, unknown>> {
  const body = await readJson(c, options);
  if (body === undefined && !options.required) return {};
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new HttpError(400, 'INVALID_BODY', 'The request body must be a JSON object');
  return body as Record<string, unknown>;
}
