import type { ClientContext } from '../core/context.js';
import { ClientError } from '../http/errors.js';
import { loadChunk } from '../core/lazy.js';
import { deviceRecipientId } from './push.js';
import type {
  ListOptions,
  Notification,
  NotificationChanges,
  NotificationFilter,
  NotificationInput,
  PushSubscription,
  SubscribeOptions,
} from '../contract/notifications.js';

/** Client.Notifications: the notification REST API, typed (docs/notifications.md). */
export interface NotificationsApi {
  /** Notifications visible to this token (studio: every status; others: published ones in scope, and broadcasts). */
  list(options?: ListOptions): Promise<Notification[]>;
  /** How many notifications `list` would match (without limit). */
  count(options?: NotificationFilter): Promise<number>;
  /** Creates one notification (draft unless `status` says otherwise). */
  create(notification: NotificationInput): Promise<Notification>;
  /** Creates all of them or none (at most 100). */
  batch(notifications: NotificationInput[]): Promise<Notification[]>;
  update(id: number, changes: NotificationChanges): Promise<Notification>;
  /** Soft delete: `list({ includeDeleted: true })` still shows it. */
  remove(id: number): Promise<void>;
  /** Marks notifications read for a recipient; resolves with how many were newly marked. */
  markAsRead(recipientId: string, ids: number[]): Promise<number>;
  /** Published notifications visible to the user that `recipientId` has not read. */
  unreadCount(recipientId: string, options?: Omit<NotificationFilter, 'recipientId' | 'unread'>): Promise<number>;
  /** Registers this device for push (browser Push API + service worker, or a given token). */
  subscribe(options?: SubscribeOptions): Promise<PushSubscription>;
  /** Every push subscription of the app (studio tokens only; API tokens get 403). */
  subscriptions(options?: { signal?: AbortSignal }): Promise<PushSubscription[]>;
  /** This device's recipient id (a GUID kept in localStorage, or in memory). */
  recipientId(): string;
}

const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const bad = (message: string) => new ClientError('INVALID_ARGUMENT', message);
const isObject = (v: unknown): boolean => typeof v === 'object' && v !== null && !Array.isArray(v);

function checkId(id: unknown, name: string): number {
  if (typeof id !== 'number' || !Number.isSafeInteger(id) || id <= 0) throw bad(`${name} must be a positive integer, got ${JSON.stringify(id)}`);
  return id;
}

function checkGuid(value: unknown, name: string): string {
  if (typeof value !== 'string' || !GUID.test(value)) throw bad(`${name} must be a GUID string, got ${JSON.stringify(value)}`);
  return value;
}

export function createNotificationsApi(ctx: ClientContext): NotificationsApi {
  const path = (suffix = '') => `v1/apps/${ctx.appId()}/notifications${suffix}`;
  const host = { ctx, ClientError };
  const writes = () => loadChunk('notify', ctx.config().assetsUrl);

  function filterBody(options: NotificationFilter): Record<string, unknown> {
    if (!isObject(options)) throw bad('options must be an object');
    const { signal: _signal, user, ...rest } = options;
    if (rest.recipientId !== undefined) checkGuid(rest.recipientId, 'recipientId');
    if (rest.where !== undefined && !isObject(rest.where)) throw bad('where must be an object');
    const effectiveUser = user === undefined ? ctx.config().user : user;
    return { ...rest, ...(effectiveUser ? { user: effectiveUser } : {}) };
  }

  const api: NotificationsApi = {
    async list(options = {}) {
      const body = filterBody(options);
      if (options.limit !== undefined && (!Number.isInteger(options.limit) || options.limit < 1)) throw bad('limit must be a positive integer');
      const { notifications } = await ctx.http.request<{ notifications: Notification[] }>('POST', path(), { json: body, signal: options.signal });
      return notifications;
    },

    async count(options = {}) {
      const { count } = await ctx.http.request<{ count: number }>('POST', path(), {
        json: { ...filterBody(options), count: true },
        signal: options.signal,
      });
      return count;
    },

    // Writes (API and studio tokens only, never a page's client token) are the lazy `notify` chunk: src/notifications/writes.ts.
    create: (notification) => writes().then((w) => w.create(host, notification)),
    batch: (notifications) => writes().then((w) => w.batch(host, notifications)),
    update: (id, changes) => writes().then((w) => w.update(host, id, changes)),
    remove: (id) => writes().then((w) => w.remove(host, id)),

    async markAsRead(recipientId, ids) {
      checkGuid(recipientId, 'recipientId');
      if (!Array.isArray(ids) || ids.length === 0) throw bad('ids must be a non-empty array of notification ids');
      ids.forEach((id, i) => checkId(id, `ids[${i}]`));
      const { marked } = await ctx.http.request<{ marked: number }>('POST', path('/mark-as-read'), { json: { recipientId, entries: ids } });
      return marked;
    },

    async unreadCount(recipientId, options = {}) {
      checkGuid(recipientId, 'recipientId');
      return api.count({ ...options, recipientId, unread: true });
    },

    async subscribe(options = {}) {
      if (!isObject(options)) throw bad('options must be an object');
      const uuid = options.uuid === undefined ? deviceRecipientId() : checkGuid(options.uuid, 'uuid');
      if (options.token !== undefined && (typeof options.token !== 'string' || options.token === '')) throw bad('token must be a non-empty string');
      const token =
        options.token ??
        (await (await loadChunk('push', ctx.config().assetsUrl)).browserPushToken({ ctx, ClientError }, options.serviceWorker, options.signal));
      const nav = (globalThis as { navigator?: { userAgent?: string } }).navigator;
      const user = options.user === undefined ? ctx.config().user : options.user;
      const json = {
        token,
        uuid,
        platform: options.platform ?? 'web',
        device: options.device ?? nav?.userAgent ?? 'unknown',
        ...(user ? { user } : {}),
      };
      const res = await ctx.http.request<{ subscription: PushSubscription }>('POST', `v1/apps/${ctx.appId()}/subscriptions`, {
        json,
        signal: options.signal,
      });
      return res.subscription;
    },

    async subscriptions(options = {}) {
      const res = await ctx.http.request<{ subscriptions: PushSubscription[] }>('GET', `v1/apps/${ctx.appId()}/subscriptions`, {
        signal: options.signal,
      });
      return res.subscriptions;
    },

    recipientId: deviceRecipientId,
  };
  return api;
}
