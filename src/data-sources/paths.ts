import { ClientError } from '../http/errors.js';

/** An id or a name of a data source, as a path segment plus the `dsn` flag for all-digit names. */
export interface DataSourceAddress {
  segment: string;
  query: { dsn?: boolean };
}

export function addressOf(idOrName: number | string): DataSourceAddress {
  if (typeof idOrName === 'number') {
    if (!Number.isSafeInteger(idOrName) || idOrName <= 0)
      throw new ClientError('INVALID_ARGUMENT', `A data source id must be a positive integer, got ${idOrName}`);
    return { segment: String(idOrName), query: {} };
  }
  if (typeof idOrName !== 'string' || idOrName.trim() === '')
    throw new ClientError('INVALID_ARGUMENT', 'A data source is addressed by a positive integer id or a non-empty name');
  // A string is always a name: an all-digit name needs the dsn flag so the backend does not read it as an id.
  return { segment: encodeURIComponent(idOrName), query: /^\d+$/.test(idOrName) ? { dsn: true } : {} };
}

export function checkId(value: unknown, what: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0)
    throw new ClientError('INVALID_ARGUMENT', `${what} must be a positive integer, got ${JSON.stringify(value)}`);
  return value;
}

export function checkObject(value: unknown, what: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new ClientError('INVALID_ARGUMENT', `${what} must be an object`);
  return value as Record<string, unknown>;
}
