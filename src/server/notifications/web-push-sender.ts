import type { Agent } from 'node:https';
import type webpush from 'web-push';
import { PushSendError, type PushMessage, type PushSender } from './types.js';
import type { VapidKeys } from './vapid.js';

/**
 * Web Push delivery (RFC 8030 with VAPID). A web subscription's `token` is the
 * JSON of the browser's PushSubscription (`{ endpoint, keys: { p256dh, auth } }`).
 * Other platforms need their vendor's service (APNs, FCM) and fail permanently here.
 */
export interface WebPushSenderOptions {
  /** How long the push service keeps an undelivered message, seconds (default one day). */
  ttlSeconds?: number;
  /** HTTPS agent for the push service requests (proxies, private CAs). */
  agent?: Agent;
}

/** web-push is an optional peer dependency: loaded on the first delivery (startServer checks it is installed). */
let loaded: Promise<typeof webpush> | undefined;
const loadWebPush = () => (loaded ??= import('web-push').then((m) => m.default));

export function createWebPushSender(keys: () => Promise<VapidKeys>, options: WebPushSenderOptions = {}): PushSender {
  return {
    async publicKey() {
      return (await keys()).publicKey;
    },
    async send(message: PushMessage) {
      let subscription: webpush.PushSubscription;
      try {
        subscription = JSON.parse(message.subscription.token) as webpush.PushSubscription;
      } catch {
        throw new PushSendError(`Subscription ${message.subscription.id} (${message.subscription.platform}) has no Web Push token`, true);
      }
      if (typeof subscription?.endpoint !== 'string' || typeof subscription.keys?.p256dh !== 'string' || typeof subscription.keys?.auth !== 'string')
        throw new PushSendError(`Subscription ${message.subscription.id} (${message.subscription.platform}) has no Web Push token`, true);
      const vapid = await keys();
      const webpush = await loadWebPush();
      try {
        await webpush.sendNotification(subscription, JSON.stringify(message.payload), {
          vapidDetails: vapid,
          TTL: options.ttlSeconds ?? 24 * 3600,
          // Same topic on a retry: a push service still holding the first copy replaces it.
          topic: `d${message.deliveryId}`,
          ...(options.agent ? { agent: options.agent } : {}),
        });
      } catch (error) {
        const status = (error as { statusCode?: number }).statusCode;
        // 404/410: the subscription expired or was removed by the user (RFC 8030 §7.3).
        const gone = status === 404 || status === 410;
        throw new PushSendError(`Web Push failed${status ? ` with ${status}` : ''}: ${(error as Error).message}`, gone, gone);
      }
    },
  };
}
