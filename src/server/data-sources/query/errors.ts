import { HttpError } from '../../http/errors.js';

/** Every refusal of the query engine: 400 INVALID_QUERY naming the field. */
export const invalidQuery = (message: string) => new HttpError(400, 'INVALID_QUERY', message);

/** Runs `fn`; any error that is not already an HttpError becomes a 400 naming `field`. */
export function asInvalidQuery<T>(field: string, fn: () => T): T {
  try {
    return fn();
  } catch (error) {
    if (error instanceof HttpError) throw error;
    throw invalidQuery(`${field}: ${(error as Error)?.message ?? String(error)}`);
  }
}

export const isPlainObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
