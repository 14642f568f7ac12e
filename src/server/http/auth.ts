import type { Context, MiddlewareHandler } from 'hono';
import { matchedRoutes } from 'hono/route';
import type { AppEnv, ServerContext } from '../context.js';
import { ROUTES } from '../routes/openapi-document.js';
import { findToken, type TokenKind, type TokenRecord } from '../store/identity.js';
import { HttpError } from './errors.js';
import { acceptedKinds, refuseKind } from './token-kinds.js';
import { isPageToken, resolvePageToken } from './debug-tokens.js';

/** Resolves the `Auth-token` header. An unknown token is refused at once; a missing one is left to the route. */
export function authMiddleware(ctx: ServerContext): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const header = c.req.header('Auth-token');
    if (header === undefined || header === '') {
      c.set('auth', null);
    } else {
      // A debug page's own short-lived token (src/server/http/debug-tokens.ts), else a stored token.
      const page = isPageToken(header);
      const token = page ? await resolvePageToken(ctx, header) : await findToken(ctx.db, header);
      if (!token)
        throw new HttpError(
          401,
          'INVALID_TOKEN',
          page ? 'The Auth-token header holds an expired or unknown debug page token' : 'The Auth-token header holds an unknown token',
        );
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
  refuseKind(auth, ['studio'], 'do this');
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

const isParam = (segment: string) => segment.startsWith(':');

/** Of two routes matching the same path, the one Hono's handlers answer with: a fixed segment beats a parameter. */
function moreSpecific(a: string, b: string): boolean {
  const as = a.split('/');
  const bs = b.split('/');
  for (let i = 0; i < Math.min(as.length, bs.length); i++) {
    if (isParam(as[i]!) !== isParam(bs[i]!)) return !isParam(as[i]!);
  }
  return false;
}

/**
 * The route (`METHOD /path` of `ROUTES`) that answers this request, from Hono's own match (so the path is
 * decoded exactly as the router decodes it), or undefined (no such route: 404 later).
 */
export function routeOf(c: Context<AppEnv>): string | undefined {
  let best: string | undefined;
  for (const route of matchedRoutes(c)) {
    const key = `${route.method} ${route.path}`;
    if (!(key in ROUTES)) continue;
    if (best === undefined || moreSpecific(route.path, best.slice(best.indexOf(' ') + 1))) best = key;
  }
  return best;
}

/**
 * For a route that takes client tokens for some requests only: refuses the caller's token unless its kind is
 * among `kinds` (no token: left to the route, which answers 401 or serves public data).
 */
export function requireKind(c: Context<AppEnv>, kinds: readonly TokenKind[], what: string): void {
  const auth = c.get('auth');
  if (auth) refuseKind(auth, kinds, what);
}

/** Refuses a token whose kind the route does not accept, before the route runs (after `authMiddleware`). */
export function tokenKindGate(): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const auth = c.get('auth');
    if (auth) {
      const route = routeOf(c);
      if (route) refuseKind(auth, acceptedKinds(route), `call ${route} (${ROUTES[route]!.summary})`);
      // A route missing from the table (a new route not yet listed) is closed to pages' tokens.
      else refuseKind(auth, ['api', 'studio'], `call ${c.req.method} ${new URL(c.req.url).pathname}`);
    }
    await next();
  };
}
