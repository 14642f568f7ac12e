/**
 * The Push API side of `Client.Notifications.subscribe()` (a screen subscribes once per device): the lazy
 * `push` chunk of client.js (`push-<hash>.mjs`, see src/core/lazy.ts). client.js passes its context and error class.
 */
import type { ClientContext } from '../core/context.js';
import type { ClientError } from '../http/errors.js';

export interface PushHost {
  ctx: ClientContext;
  ClientError: typeof ClientError;
}

function base64UrlToBytes(value: string): Uint8Array<ArrayBuffer> {
  const base64 = (value + '='.repeat((4 - (value.length % 4)) % 4)).replace(/-/g, '+').replace(/_/g, '/');
  const raw = atob(base64);
  const bytes = new Uint8Array(new ArrayBuffer(raw.length));
  for (let i = 0; i < raw.length; i++) bytes[i] = raw.charCodeAt(i);
  return bytes;
}

/** Subscribes this browser with the Push API and returns the token to register (the PushSubscription's JSON). */
export async function browserPushToken(
  { ctx, ClientError }: PushHost,
  serviceWorker: ServiceWorkerRegistration | string | undefined,
  signal: AbortSignal | undefined,
): Promise<string> {
  const nav = (globalThis as { navigator?: Navigator }).navigator;
  if (!nav?.serviceWorker || typeof (globalThis as { PushManager?: unknown }).PushManager === 'undefined')
    throw new ClientError(
      'PUSH_UNSUPPORTED',
      'This environment has no Push API or service workers; pass { token, platform } to register a push token obtained elsewhere',
    );
  const registration =
    typeof serviceWorker === 'object'
      ? serviceWorker
      : typeof serviceWorker === 'string'
        ? await nav.serviceWorker.register(serviceWorker)
        : await nav.serviceWorker.getRegistration();
  if (!registration) throw new ClientError('NO_SERVICE_WORKER', 'No service worker is registered for this page; pass { serviceWorker: "/sw.js" }');
  const { publicKey } = await ctx.http.request<{ publicKey: string | null }>('GET', `v1/apps/${ctx.appId()}/subscriptions/public-key`, { signal });
  if (!publicKey) throw new ClientError('PUSH_NOT_CONFIGURED', 'The backend has no Web Push (VAPID) key');
  let subscription: globalThis.PushSubscription | null;
  try {
    subscription =
      (await registration.pushManager.getSubscription()) ??
      (await registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: base64UrlToBytes(publicKey) }));
  } catch (error) {
    const denied = (error as { name?: string })?.name === 'NotAllowedError';
    throw new ClientError(
      denied ? 'PUSH_PERMISSION_DENIED' : 'PUSH_SUBSCRIBE_FAILED',
      denied ? 'The user did not allow notifications' : `Push subscription failed: ${(error as Error)?.message ?? String(error)}`,
    );
  }
  return JSON.stringify(subscription.toJSON());
}
