import type { ServerContext } from '../context.js';
import { createNotificationService, type NotificationService } from './service.js';
import { ensureVapidKeys, type VapidKeys } from './vapid.js';
import { createWebPushSender } from './web-push-sender.js';

export { createNotificationService, STATUS_MOVES, type NotificationService } from './service.js';
export { createRecordingPushSender, type RecordingPushSender } from './recording-sender.js';
export { createWebPushSender } from './web-push-sender.js';
export { PUSH_RETRY, retryDelayMs } from './outbox.js';
export * from './types.js';

const services = new WeakMap<ServerContext, NotificationService>();

/**
 * The notification service of a server: created once per server (routes, the
 * app-actions `send-notification` function and the background loop share it).
 * Starts its timer loop, generates the VAPID keys on first start, and stops
 * with the server.
 */
export function getNotificationService(ctx: ServerContext): NotificationService {
  let service = services.get(ctx);
  if (service) return service;
  let keys: Promise<VapidKeys> | undefined;
  const vapid = () => (keys ??= ensureVapidKeys(ctx.db));
  const ready = vapid().catch((error) => console.error('[in-app-runtime server] VAPID keys could not be created', error));
  const sender = ctx.pushSender ?? createWebPushSender(vapid);
  service = createNotificationService(ctx, {
    sender,
    publicKey: async () => (await sender.publicKey?.()) ?? (await vapid()).publicKey,
  });
  services.set(ctx, service);
  const s = service;
  ctx.onTick(() => s.tick());
  ctx.onClose(async () => {
    await ready;
    await s.stop();
  });
  return service;
}
