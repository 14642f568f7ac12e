import type { Context } from 'hono';
import type { App, AppEnv, ServerContext } from '../context.js';
import { canAccessApp, intParam, requireAuth, requireStudio } from '../http/auth.js';
import { readJsonObject } from '../http/body.js';
import { HttpError } from '../http/errors.js';
import { getApp, renameApp, type AppRecord } from '../store/identity.js';

/** Loads `:appId` and checks the caller may act for it (401/403/404). */
export async function loadApp(ctx: ServerContext, c: Context<AppEnv>, param = 'appId'): Promise<AppRecord> {
  const auth = requireAuth(c);
  const id = intParam(c, param);
  const app = await getApp(ctx.db, id);
  if (!app) throw new HttpError(404, 'APP_NOT_FOUND', `App ${id} not found`);
  if (!canAccessApp(auth, app)) throw new HttpError(403, 'FORBIDDEN', `This token has no access to app ${id}`);
  return app;
}

export function registerAppRoutes(app: App, ctx: ServerContext): void {
  app.get('/v1/apps/:appId', async (c) => c.json({ app: await loadApp(ctx, c) }));

  /** Studio only: rename the app. */
  app.put('/v1/apps/:appId', async (c) => {
    requireStudio(c);
    const record = await loadApp(ctx, c);
    const body = await readJsonObject(c);
    if (typeof body.name !== 'string' || body.name.trim() === '')
      throw new HttpError(400, 'INVALID_FIELD', 'Field "name" must be a non-empty string');
    await renameApp(ctx.db, record.id, body.name.trim());
    return c.json({ app: { ...record, name: body.name.trim() } });
  });
}
