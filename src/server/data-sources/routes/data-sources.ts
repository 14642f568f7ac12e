import type { Context } from 'hono';
import type { App, AppEnv, ServerContext } from '../../context.js';
import { readJsonObject } from '../../http/body.js';
import { HttpError } from '../../http/errors.js';
import type { DataSourceService } from '../service.js';
import { callerOf, dataSourceRef } from './http.js';

/**
 * The context of a create: `appId` / `organizationId` from the query or from the body (integration clients send
 * them in the body); the same key in both must agree. Returns the body without them.
 */
function createScope(c: Context<AppEnv>, body: Record<string, unknown>) {
  const { appId, organizationId, ...rest } = body;
  const pick = (key: 'appId' | 'organizationId', fromBody: unknown): unknown => {
    const fromQuery = c.req.query(key);
    if (fromBody === undefined || fromBody === null) return fromQuery;
    if (typeof fromBody !== 'number' && typeof fromBody !== 'string') throw new HttpError(400, 'INVALID_FIELD', `Field "${key}" must be a positive integer`);
    if (fromQuery !== undefined && fromQuery !== String(fromBody))
      throw new HttpError(400, 'INVALID_PARAMETER', `"${key}" differs between the query (${fromQuery}) and the body (${String(fromBody)})`);
    return fromBody;
  };
  return { scope: { appId: pick('appId', appId), organizationId: pick('organizationId', organizationId) }, rest };
}

/** Data sources: list, create, get (by id or name), update, delete. */
export function registerDataSourceCrudRoutes(app: App, _ctx: ServerContext, service: DataSourceService): void {
  app.get('/v1/data-sources', async (c) =>
    c.json({
      dataSources: await service.list(callerOf(c), { appId: c.req.query('appId'), organizationId: c.req.query('organizationId'), type: c.req.query('type') }),
    }),
  );

  app.post('/v1/data-sources', async (c) => {
    const { scope, rest } = createScope(c, await readJsonObject(c));
    return c.json({ dataSource: await service.create(callerOf(c), scope, rest) }, 201);
  });

  app.get('/v1/data-sources/:ds', async (c) => c.json({ dataSource: await service.get(callerOf(c), dataSourceRef(c)) }));

  app.put('/v1/data-sources/:ds', async (c) => {
    const ref = dataSourceRef(c);
    const body = await readJsonObject(c);
    return c.json({ dataSource: await service.update(callerOf(c), ref, body) });
  });

  app.delete('/v1/data-sources/:ds', async (c) => {
    await service.remove(callerOf(c), dataSourceRef(c));
    return c.body(null, 200);
  });
}
