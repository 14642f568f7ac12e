import { getConnInfo } from '@hono/node-server/conninfo';
import type { Context } from 'hono';
import type { App, AppEnv, ServerContext } from '../context.js';
import { intParam, requireAuth, requireStudio } from '../http/auth.js';
import { readJson, readJsonObject } from '../http/body.js';
import { checkFilterFields } from '../http/nesting.js';
import type { NotificationService } from '../notifications/service.js';
import { parseMarkAsRead } from '../notifications/validate.js';
import { loadApp } from './apps.js';

const remoteAddress = (c: Context<AppEnv>): string => {
  try {
    return getConnInfo(c).remote.address ?? '';
  } catch {
    return '';
  }
};

/** Routes of notifications, read receipts, push subscriptions (docs/notifications.md). */
export function registerNotificationRoutes(app: App, ctx: ServerContext, service: NotificationService): void {
  const base = '/v1/apps/:appId/notifications';

  /** A notification's `scope` (matched like a `where`) nests at most `limits.filterDepth` levels. */
  const checkedScope = <T>(body: T, prefix = ''): T => {
    checkFilterFields(body, ctx.limits.filterDepth, ['scope'], prefix);
    return body;
  };
  const list = async (c: Context<AppEnv>, input: Record<string, unknown>, fromQuery: boolean) => {
    const record = await loadApp(ctx, c);
    checkFilterFields(input, ctx.limits.filterDepth, ['where', 'scope', 'user']);
    const query = service.parseList(input, fromQuery);
    const result = await service.list(record.id, { studio: requireAuth(c).kind === 'studio' }, query);
    return typeof result === 'number' ? c.json({ count: result }) : c.json({ notifications: result });
  };
  app.get(base, (c) => list(c, c.req.query(), true));
  app.post(base, async (c) => list(c, await readJsonObject(c, { required: false }), false));

  app.put(base, async (c) => {
    const record = await loadApp(ctx, c);
    const notification = await service.create(record.id, checkedScope(await readJsonObject(c)));
    return c.json({ notification }, 201);
  });

  app.post(`${base}/batch`, async (c) => {
    const record = await loadApp(ctx, c);
    const body = await readJsonObject(c);
    if (Array.isArray(body.notifications)) body.notifications.forEach((n, i) => checkedScope(n, `notifications[${i}].`));
    const notifications = await service.batch(record.id, body);
    return c.json({ notifications }, 201);
  });

  app.post(`${base}/mark-as-read`, async (c) => {
    const record = await loadApp(ctx, c);
    const { recipientId, ids } = parseMarkAsRead(await readJsonObject(c));
    return c.json({ marked: await service.markAsRead(record.id, recipientId, ids) });
  });

  app.put(`${base}/:notificationId`, async (c) => {
    const record = await loadApp(ctx, c);
    const id = intParam(c, 'notificationId');
    const notification = await service.update(record.id, id, checkedScope(await readJson(c, { required: true })));
    return c.json({ notification });
  });

  app.delete(`${base}/:notificationId`, async (c) => {
    const record = await loadApp(ctx, c);
    await service.remove(record.id, intParam(c, 'notificationId'));
    return c.json({});
  });

  /** Studio only: the push deliveries of a notification with their attempts. */
  app.get(`${base}/:notificationId/deliveries`, async (c) => {
    requireStudio(c);
    const record = await loadApp(ctx, c);
    return c.json({ deliveries: await service.deliveries(record.id, intParam(c, 'notificationId')) });
  });

  app.post('/v1/apps/:appId/subscriptions', async (c) => {
    const record = await loadApp(ctx, c);
    const { subscription, created } = await service.subscribe(record.id, await readJsonObject(c), remoteAddress(c));
    return c.json({ subscription }, created ? 201 : 200);
  });

  /** Authentication rule 5: studio users only, API tokens get 403. */
  app.get('/v1/apps/:appId/subscriptions', async (c) => {
    requireStudio(c);
    const record = await loadApp(ctx, c);
    return c.json({ subscriptions: await service.subscriptions(record.id) });
  });

  app.get('/v1/apps/:appId/subscriptions/public-key', async (c) => {
    await loadApp(ctx, c);
    return c.json({ publicKey: (await service.publicKey()) ?? null });
  });
}
