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
 * Builds the notification service of a backend: startServer does it once (server/services.ts), and routes, the
 * `send-notification` function of server runs and the background loop share it. Building starts nothing:
 * `start()` creates the VAPID keys (first start of a database), starts the timer loop and stops it with the
 * server.
 */
export function buildNotificationService(ctx: ServerContext): { service: NotificationService; start(): void } {
  let keys: Promise<VapidKeys> | undefined;
  const vapid = () => (keys ??= ensureVapidKeys(ctx.db));
  const sender = ctx.pushSender ?? createWebPushSender(vapid);
  const service = createNotificationService(ctx, {
    sender,
    publicKey: async () => (await sender.publicKey?.()) ?? (await vapid()).publicKey,
  });
  services.set(ctx, service);
  const start = () => {
    const ready = vapid().catch((error) => console.error('[in-app-runtime server] VAPID keys could not be created', error));
    ctx.onTick(() => service.tick());
    service.start();
    ctx.onClose(async () => {
      await ready;
      await service.stop();
    });
  };
  return { service, start };
}

/** The notification service startServer built for this server context (it is never created here). */
export function getNotificationService(ctx: ServerContext): NotificationService {
  const service = services.get(ctx);
  if (!service) throw new Error('No notification service for this server context: startServer() builds it');
  return service;
}
