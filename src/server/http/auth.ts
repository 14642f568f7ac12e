import type { Context, MiddlewareHandler } from 'hono';
import type { AppEnv, ServerContext } from '../context.js';
import { findToken, type TokenRecord } from '../store/identity.js';
import { HttpError } from './errors.js';

/** Resolves the `Auth-token` header. An unknown token is refused at once; a missing one is left to the route. */
export function authMiddleware(ctx: ServerContext): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const header = c.req.header('Auth-token');
    if (header === undefined || header === '') {
      c.set('auth', null);
    } else {
      const token = await findToken(ctx.db, header);
      if (!token) throw new HttpError(401, 'INVALID_TOKEN', 'The Auth-token header holds an unknown token');
      c.set('auth', token);
    }
    await next();
  };
}

/** The caller's token, or 401. */
export function requireAuth(c: Context<AppEnv>): TokenRecord {
  const auth = c.get('auth');
  if (!auth) throw new HttpError(401, 'MISSING_TOKEN', 'This route needs an Auth-token header');
  return auth;
}

/** A studio token of the organization, or 401/403. */
export function requireStudio(c: Context<AppEnv>): TokenRecord {
  const auth = requireAuth(c);
  if (auth.kind !== 'studio') throw new HttpError(403, 'STUDIO_ONLY', 'Only studio users may do this; API tokens are refused');
  return auth;
}

/** Whether a token may act for `app` (its own app, or any app of its organization for a studio token). */
export function canAccessApp(auth: TokenRecord, app: { id: number; organizationId: number }): boolean {
  return auth.kind === 'studio' ? auth.organizationId === app.organizationId : auth.appId === app.id;
}

/** Parses an integer path parameter, or 400 naming it. */
export function intParam(c: Context, name: string): number {
  const raw = c.req.param(name) ?? '';
  if (!/^\d+$/.test(raw) || Number(raw) <= 0 || !Number.isSafeInteger(Number(raw)))
    throw new HttpError(400, 'INVALID_PARAMETER', `Path parameter "${name}" must be a positive integer, got "${raw}"`);
  return Number(raw);
}
