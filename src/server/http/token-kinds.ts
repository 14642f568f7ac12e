/**
 * Which token kinds each REST route accepts (docs/security.md, "Token kinds"), in one table, enforced for every
 * `/v1` request by `tokenKindGate` (auth.ts) before the route runs, and shown in the OpenAPI document as `x-token-kinds`.
 *
 * - Client tokens (`iar_client_…`, the token a page carries) may call only the routes of `CLIENT_ROUTES`: a
 *   route added later refuses them until it is listed here (403 `CLIENT_TOKEN_FORBIDDEN`).
 * - `STUDIO_ROUTES` need a studio token (API tokens: 403 `STUDIO_ONLY`, as the routes themselves check).
 * - Every other route takes API and studio tokens.
 *
 * A few client routes are limited further by what the request asks (`requireKind` of auth.ts in the route): the live
 * copies of actions only (`environment=live`), device log upload but not log reading.
 */
import type { TokenKind, TokenRecord } from '../store/identity.js';
import { HttpError } from './errors.js';

/** The routes a client token may call (keys of `ROUTES`, `METHOD /path`). */
export const CLIENT_ROUTES: ReadonlySet<string> = new Set([
  'GET /v1/apps/:appId',
  // Data sources: entries as the access rules allow (like the app's API token); never administration.
  'GET /v1/data-sources',
  'GET /v1/data-sources/:ds',
  'GET /v1/data-sources/:ds/data',
  'PUT /v1/data-sources/:ds/data',
  'POST /v1/data-sources/:ds/data/query',
  'GET /v1/data-sources/:ds/data/:entryId',
  'PUT /v1/data-sources/:ds/data/:entryId',
  'DELETE /v1/data-sources/:ds/data/:entryId',
  'GET /v1/data-sources/:ds/indexes/:indexes',
  'POST /v1/data-sources/:ds/commit',
  'GET /v1/data-sources/:ds/files/:fileId',
  // Media library: a page downloads files (e.g. an entry's <field> URL with <field>MediaFileId); never manages them.
  'GET /v1/media/files/:fileId/contents',
  // Notifications as an app user: published ones, read receipts, push subscription of the device.
  'GET /v1/apps/:appId/notifications',
  'POST /v1/apps/:appId/notifications',
  'POST /v1/apps/:appId/notifications/mark-as-read',
  'POST /v1/apps/:appId/subscriptions',
  'GET /v1/apps/:appId/subscriptions/public-key',
  // Actions: the published copies, runs, device log upload, the function catalog devices run with.
  'GET /v1/apps/:appId/tasks',
  'GET /v1/apps/:appId/tasks/:idOrName',
  'POST /v1/apps/:appId/tasks/:idOrName/run',
  'POST /v1/apps/:appId/tasks/logs',
  // A run by id: a server run only with the Idempotency-Key it was queued with (src/server/actions/run-view.ts).
  'GET /v1/apps/:appId/tasks/runs',
  'GET /v1/apps/:appId/tasks/runs/:runId',
  'GET /v1/apps/:appId/tasks/functions',
  'POST /v1/apps/:appId/analytics',
]);

/** The routes only studio tokens may call. */
export const STUDIO_ROUTES: ReadonlySet<string> = new Set([
  'PUT /v1/apps/:appId',
  'GET /v1/apps/:appId/tokens',
  'POST /v1/apps/:appId/tokens',
  'DELETE /v1/apps/:appId/tokens/:tokenId',
  'GET /v1/organizations/:organizationId',
  'PUT /v1/organizations/:organizationId',
  'POST /v1/organizations/:organizationId/apps',
  'GET /v1/data-sources/:ds/logs',
  'GET /v1/apps/:appId/notifications/:notificationId/deliveries',
  'GET /v1/apps/:appId/subscriptions',
  'POST /v1/apps/:appId/tasks/functions',
]);

/** The token kinds a route (`METHOD /path` of `ROUTES`) accepts. */
export function acceptedKinds(route: string): TokenKind[] {
  if (STUDIO_ROUTES.has(route)) return ['studio'];
  if (CLIENT_ROUTES.has(route)) return ['client', 'api', 'studio'];
  return ['api', 'studio'];
}

/** 403 for a token whose kind is not among `kinds`; `what` says what was asked. */
export function refuseKind(auth: TokenRecord, kinds: readonly TokenKind[], what: string): void {
  if (kinds.includes(auth.kind)) return;
  if (auth.kind === 'client')
    throw new HttpError(
      403,
      'CLIENT_TOKEN_FORBIDDEN',
      `Client tokens (the token of an app screen) may not ${what}; use an ${kinds.includes('api') ? 'API or studio' : 'studio'} token`,
    );
  throw new HttpError(403, 'STUDIO_ONLY', `Only studio users may ${what}; ${auth.kind === 'api' ? 'API' : auth.kind} tokens are refused`);
}
