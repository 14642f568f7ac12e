import type { App, ServerContext } from '../../context.js';
import { readJsonObject } from '../../http/body.js';
import type { DataSourceService } from '../service.js';
import { callerOf, dataSourceRef } from './http.js';

/** Data sources: list, create, get (by id or name), update, delete. */
export function registerDataSourceCrudRoutes(app: App, _ctx: ServerContext, service: DataSourceService): void {
  app.get('/v1/data-sources', async (c) =>
    c.json({ dataSources: await service.list(callerOf(c), { appId: c.req.query('appId'), organizationId: c.req.query('organizationId') }) }),
  );

  app.post('/v1/data-sources', async (c) => {
    const body = await readJsonObject(c);
    const scope = { appId: c.req.query('appId'), organizationId: c.req.query('organizationId') };
    return c.json({ dataSource: await service.create(callerOf(c), scope, body) }, 201);
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
