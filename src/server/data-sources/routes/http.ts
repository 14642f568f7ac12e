import type { Context } from 'hono';
import type { AppEnv } from '../../context.js';
import { HttpError } from '../../http/errors.js';
import type { Caller } from '../access.js';
import type { DataSourceRef } from '../core.js';

/** The caller of a REST request: its token, or none. */
export const callerOf = (c: Context<AppEnv>): Caller => ({ kind: 'token', token: c.get('auth') ?? null });

/**
 * `:ds` of a path: an id, or a URL-encoded name. An all-digit value is an id unless the `dsn` query flag is
 * present. `organizationId` in the query picks the organization of a name when the request has no token.
 */
export function dataSourceRef(c: Context<AppEnv>): DataSourceRef {
  const raw = c.req.param('ds') ?? '';
  if (raw === '') throw new HttpError(400, 'INVALID_PARAMETER', 'Missing data source id or name');
  if (/^\d+$/.test(raw) && c.req.query('dsn') === undefined) {
    const id = Number(raw);
    if (!Number.isSafeInteger(id) || id <= 0) throw new HttpError(400, 'INVALID_PARAMETER', `Invalid data source id "${raw}"`);
    return { id };
  }
  const org = c.req.query('organizationId');
  if (org !== undefined && (!/^\d+$/.test(org) || !Number.isSafeInteger(Number(org))))
    throw new HttpError(400, 'INVALID_PARAMETER', 'Query parameter "organizationId" must be a positive integer');
  return org !== undefined ? { name: raw, organizationId: Number(org) } : { name: raw };
}

/** A positive integer path parameter, or 400 naming it. */
export function idParam(c: Context, name: string): number {
  const raw = c.req.param(name) ?? '';
  const id = Number(raw);
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(id) || id <= 0)
    throw new HttpError(400, 'INVALID_PARAMETER', `Path parameter "${name}" must be a positive integer, got "${raw}"`);
  return id;
}
