import type { App, ServerContext } from '../../context.js';
import { requireStudio } from '../../http/auth.js';
import { readJsonObject } from '../../http/body.js';
import { HttpError } from '../../http/errors.js';
import { createApp, createToken } from '../../store/identity.js';
import { loadApp } from '../../routes/apps.js';
import { deleteAppToken, findOrganization, listAppTokens, saveOrganizationSettings } from '../store/admin.js';
import { listLogs } from '../store/logs.js';
import type { DataSourceService } from '../service.js';
import { callerOf, dataSourceRef, idParam } from './http.js';

/**
 * Studio-only management used by tests and the demo: API and client tokens of an app (their ids go into access rules),
 * the organization's file encryption switch, and the log records of a data source.
 */
export function registerAdminRoutes(app: App, ctx: ServerContext, service: DataSourceService): void {
  app.get('/v1/apps/:appId/tokens', async (c) => {
    requireStudio(c);
    const record = await loadApp(ctx, c);
    return c.json({ tokens: await listAppTokens(ctx.db, record.id) });
  });

  app.post('/v1/apps/:appId/tokens', async (c) => {
    requireStudio(c);
    const record = await loadApp(ctx, c);
    const body = await readJsonObject(c, { required: false });
    if (body.name !== undefined && typeof body.name !== 'string') throw new HttpError(400, 'INVALID_FIELD', 'Field "name" must be a string');
    const kind = body.kind ?? 'api';
    if (kind !== 'api' && kind !== 'client') throw new HttpError(400, 'INVALID_FIELD', 'Field "kind" must be api or client');
    const token = await createToken(ctx.db, {
      kind,
      name: (body.name as string | undefined) ?? (kind === 'api' ? 'API token' : 'Client token'),
      organizationId: record.organizationId,
      appId: record.id,
      now: ctx.nowIso(),
    });
    return c.json({ token: { ...token, createdAt: ctx.nowIso() } }, 201);
  });

  app.delete('/v1/apps/:appId/tokens/:tokenId', async (c) => {
    requireStudio(c);
    const record = await loadApp(ctx, c);
    const id = idParam(c, 'tokenId');
    if (!(await deleteAppToken(ctx.db, record.id, id))) throw new HttpError(404, 'TOKEN_NOT_FOUND', `Token ${id} not found in app ${record.id}`);
    return c.json({});
  });

  const loadOrganization = async (c: Parameters<typeof requireStudio>[0]) => {
    const auth = requireStudio(c);
    const id = idParam(c, 'organizationId');
    const org = await findOrganization(ctx.db, id);
    if (!org || auth.organizationId !== id) throw new HttpError(404, 'ORGANIZATION_NOT_FOUND', `Organization ${id} not found`);
    return org;
  };
  const orgView = (org: { id: number; name: string; settings: Record<string, unknown> }) => ({
    id: org.id,
    name: org.name,
    encryption: org.settings.encryption === true,
  });

  app.get('/v1/organizations/:organizationId', async (c) => c.json({ organization: orgView(await loadOrganization(c)) }));

  /** `{ encryption: boolean }`: files uploaded afterwards are stored encrypted (or not); existing files keep their state. */
  app.put('/v1/organizations/:organizationId', async (c) => {
    const org = await loadOrganization(c);
    const body = await readJsonObject(c);
    for (const key of Object.keys(body))
      if (key !== 'encryption') throw new HttpError(400, 'INVALID_FIELD', `Field "${key}" cannot be changed (updatable: encryption)`);
    if (typeof body.encryption !== 'boolean') throw new HttpError(400, 'INVALID_FIELD', 'Field "encryption" must be a boolean');
    const settings = { ...org.settings, encryption: body.encryption };
    await saveOrganizationSettings(ctx.db, org.id, settings);
    return c.json({ organization: orgView({ ...org, settings }) });
  });

  /** Studio only: another app in the organization (to try access between apps). */
  app.post('/v1/organizations/:organizationId/apps', async (c) => {
    const org = await loadOrganization(c);
    const body = await readJsonObject(c);
    if (typeof body.name !== 'string' || body.name.trim() === '') throw new HttpError(400, 'INVALID_FIELD', 'Field "name" must be a non-empty string');
    const id = await createApp(ctx.db, org.id, body.name.trim(), ctx.nowIso());
    return c.json({ app: { id, name: body.name.trim(), organizationId: org.id } }, 201);
  });

  /** Studio only: the newest log records of a data source (`type`, `limit` ≤ 1000). */
  app.get('/v1/data-sources/:ds/logs', async (c) => {
    const auth = requireStudio(c);
    const ds = await service.get(callerOf(c), dataSourceRef(c));
    if (ds.organizationId !== auth.organizationId) throw new HttpError(403, 'FORBIDDEN', 'No access to this data source');
    const rawLimit = c.req.query('limit');
    const limit = rawLimit === undefined ? 100 : Number(rawLimit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000)
      throw new HttpError(400, 'INVALID_PARAMETER', 'Query parameter "limit" must be an integer from 1 to 1000');
    return c.json({ logs: await listLogs(ctx.db, { dataSourceId: ds.id, type: c.req.query('type'), limit }) });
  });
}
