import type { ClientContext } from '../core/context.js';
import { ClientError } from '../http/errors.js';

const STORAGE_KEY = 'in-app-runtime.recipientId';
let memoryRecipientId: string | undefined;

function randomGuid(): string {
  const c = globalThis.crypto;
  if (c?.randomUUID) return c.randomUUID();
  const bytes = new Uint8Array(16);
  if (c?.getRandomValues) c.getRandomValues(bytes);
  else for (let i = 0; i < 16; i++) bytes[i] = Math.floor(Math.random() * 256);
  bytes[6] = (bytes[6]! & 0x0f) | 0x40;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = [...bytes].map((b) => b.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** This device's recipient id: a GUID kept in localStorage (in memory where there is none). */
export function deviceRecipientId(): string {
  try {
    const storage = globalThis.localStorage;
    if (storage) {
      let id = storage.getItem(STORAGE_KEY);
      if (!id) {
        id = randomGuid();
        storage.setItem(STORAGE_KEY, id);
      }
      return id;
    }
  } catch {
    /* storage blocked (privacy mode): fall through */
  }
  return (memoryRecipientId ??= randomGuid());
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
  ctx: ClientContext,
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
  if (!registration)
    throw new ClientError('NO_SERVICE_WORKER', 'No service worker is registered for this page; pass { serviceWorker: "/sw.js" }');
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
