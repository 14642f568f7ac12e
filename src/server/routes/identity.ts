import type { App, ServerContext } from '../context.js';
import { requireAuth } from '../http/auth.js';
import { HttpError } from '../http/errors.js';
import { findOrganization } from '../data-sources/store/admin.js';
import { userOfToken } from '../identity/user.js';

/**
 * Who the token is, and where it works: `GET v1/user` (the token's owner) and `GET v1/organizations` (the
 * organizations visible to the token: its own, as every token belongs to exactly one). API and studio tokens
 * only (http/token-kinds.ts): a page's client token has no owner to report.
 */
export function registerIdentityRoutes(app: App, ctx: ServerContext): void {
  app.get('/v1/user', (c) => c.json({ user: userOfToken(requireAuth(c)) }));

  app.get('/v1/organizations', async (c) => {
    const auth = requireAuth(c);
    const org = await findOrganization(ctx.db, auth.organizationId);
    if (!org) throw new HttpError(404, 'ORGANIZATION_NOT_FOUND', `Organization ${auth.organizationId} not found`);
    return c.json({ organizations: [{ id: org.id, name: org.name, encryption: org.settings.encryption === true }] });
  });
}
