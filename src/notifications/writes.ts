/**
 * Notification writes (create, batch, update, remove: API and studio tokens only, never a page's client token),
 * the lazy `notify` chunk of client.js (`notify-<hash>.mjs`, loaded by src/notifications/api.ts): app screens list
 * and read notifications, the studio writes them. What it needs of client.js comes in `host`.
 */
import type { ClientContext } from '../core/context.js';
import type { ClientError } from '../http/errors.js';
import type { Notification, NotificationChanges, NotificationInput, TimeInput } from '../contract/notifications.js';

export interface NotifyHost {
  ctx: ClientContext;
  ClientError: typeof ClientError;
}

const STATUSES = ['draft', 'published', 'scheduled'];
const isObject = (v: unknown): boolean => typeof v === 'object' && v !== null && !Array.isArray(v);
const path = (ctx: ClientContext, suffix = '') => `v1/apps/${ctx.appId()}/notifications${suffix}`;

function checks({ ClientError }: NotifyHost) {
  const bad = (message: string) => new ClientError('INVALID_ARGUMENT', message);
  const checkId = (id: unknown, name: string): number => {
    if (typeof id !== 'number' || !Number.isSafeInteger(id) || id <= 0) throw bad(`${name} must be a positive integer, got ${JSON.stringify(id)}`);
    return id;
  };
  const time = (value: TimeInput | undefined, name: string): number | string | undefined => {
    if (value === undefined) return undefined;
    if (value instanceof Date) {
      if (Number.isNaN(value.getTime())) throw bad(`${name} is an invalid Date`);
      return value.toISOString();
    }
    if (typeof value !== 'number' && typeof value !== 'string') throw bad(`${name} must be Unix seconds, an ISO string or a Date`);
    return value;
  };
  const checkInput = (n: NotificationInput, name: string): Record<string, unknown> => {
    if (!isObject(n)) throw bad(`${name} must be an object`);
    if (!isObject(n.data)) throw bad(`${name}.data must be an object`);
    if (n.status !== undefined && !STATUSES.includes(n.status)) throw bad(`${name}.status must be one of ${STATUSES.join(', ')}`);
    if (n.status === 'scheduled' && n.orderAt === undefined) throw bad(`${name}.orderAt is required when status is scheduled`);
    const body: Record<string, unknown> = { ...n };
    if (n.orderAt !== undefined) body.orderAt = time(n.orderAt, `${name}.orderAt`);
    return body;
  };
  return { bad, checkId, time, checkInput };
}

/** Creates one notification (draft unless `status` says otherwise). */
export async function create(host: NotifyHost, notification: NotificationInput): Promise<Notification> {
  const json = checks(host).checkInput(notification, 'notification');
  return (await host.ctx.http.request<{ notification: Notification }>('PUT', path(host.ctx), { json })).notification;
}

/** Creates all of them or none (at most 100). */
export async function batch(host: NotifyHost, notifications: NotificationInput[]): Promise<Notification[]> {
  const { bad, checkInput } = checks(host);
  if (!Array.isArray(notifications) || notifications.length === 0) throw bad('notifications must be a non-empty array');
  const json = { notifications: notifications.map((n, i) => checkInput(n, `notifications[${i}]`)) };
  return (await host.ctx.http.request<{ notifications: Notification[] }>('POST', path(host.ctx, '/batch'), { json })).notifications;
}

export async function update(host: NotifyHost, id: number, changes: NotificationChanges): Promise<Notification> {
  const { bad, checkId, time } = checks(host);
  checkId(id, 'id');
  if (!isObject(changes)) throw bad('changes must be an object');
  if (changes.status !== undefined && !STATUSES.includes(changes.status)) throw bad(`changes.status must be one of ${STATUSES.join(', ')}`);
  const json: Record<string, unknown> = { ...changes };
  if (changes.orderAt !== undefined) json.orderAt = time(changes.orderAt, 'changes.orderAt');
  return (await host.ctx.http.request<{ notification: Notification }>('PUT', path(host.ctx, `/${id}`), { json })).notification;
}

/** Soft delete. */
export async function remove(host: NotifyHost, id: number): Promise<void> {
  checks(host).checkId(id, 'id');
  await host.ctx.http.request('DELETE', path(host.ctx, `/${id}`));
}
