import type { Context } from 'hono';
import type { App, AppEnv, ServerContext } from '../context.js';
import { canAccessApp, intParam, requireAuth, requireStudio } from '../http/auth.js';
import { readJsonObject } from '../http/body.js';
import { HttpError } from '../http/errors.js';
import { getApp, renameApp, type AppRecord } from '../store/identity.js';

/**
 * Loads `:appId` and checks the caller may act for it (401 without a token). An app the token may not act for
 * answers as a missing one, 404 without a name (issue 15, no probing).
 */
export async function loadApp(ctx: ServerContext, c: Context<AppEnv>, param = 'appId'): Promise<AppRecord> {
  const auth = requireAuth(c);
  const id = intParam(c, param);
  const app = await getApp(ctx.db, id);
  if (!app || !canAccessApp(auth, app)) throw new HttpError(404, 'APP_NOT_FOUND', `App ${id} not found`);
  return app;
}

export function registerAppRoutes(app: App, ctx: ServerContext): void {
  app.get('/v1/apps/:appId', async (c) => c.json({ app: await loadApp(ctx, c) }));

  /** Studio only: rename the app. */
  app.put('/v1/apps/:appId', async (c) => {
    requireStudio(c);
    const record = await loadApp(ctx, c);
    const body = await readJsonObject(c);
    if (typeof body.name !== 'string' || body.name.trim() === '') throw new HttpError(400, 'INVALID_FIELD', 'Field "name" must be a non-empty string');
    await renameApp(ctx.db, record.id, body.name.trim());
    return c.json({ app: { ...record, name: body.name.trim() } });
  });
}
