import { HttpError } from '../http/errors.js';
import { compileQuery } from './query.js';
import {
  NOTIFICATION_STATUSES,
  type JsonObject,
  type ListQuery,
  type NotificationCreate,
  type NotificationStatus,
  type NotificationUpdate,
  type OrderField,
  type PushNotificationSpec,
} from './types.js';

export const LIST_DEFAULT_LIMIT = 100;
export const LIST_MAX_LIMIT = 1000;
export const BATCH_MAX = 100;
export const MARK_MAX = 1000;
const ORDER_FIELDS: readonly OrderField[] = ['id', 'createdAt', 'updatedAt', 'orderAt'];
const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const invalid = (field: string, message: string) => new HttpError(400, 'INVALID_FIELD', `Field "${field}" ${message}`, { field });
export const missing = (field: string) => new HttpError(400, 'MISSING_FIELD', `Field "${field}" is required`, { field });

export const isObject = (value: unknown): value is JsonObject => typeof value === 'object' && value !== null && !Array.isArray(value);

export const isGuid = (value: unknown): value is string => typeof value === 'string' && GUID.test(value);

function refuseUnknown(body: JsonObject, allowed: readonly string[], prefix: string): void {
  for (const key of Object.keys(body))
    if (!allowed.includes(key))
      throw new HttpError(400, 'UNKNOWN_FIELD', `Field "${prefix}${key}" is not known; allowed: ${allowed.join(', ')}`, {
        field: prefix + key,
      });
}

/** 9999-12-31T23:59:59.999Z: the last instant an ISO 8601 string with a four-digit year holds. */
const MAX_TIME_MS = 253402300799999;

/** Unix seconds or an ISO 8601 string → ISO string (ms precision). */
export function parseTime(value: unknown, field: string): string {
  let ms: number;
  if (typeof value === 'number') {
    if (!Number.isFinite(value) || value < 0) throw invalid(field, 'must be a Unix time in seconds (a non-negative number) or an ISO 8601 string');
    ms = value * 1000;
  } else if (typeof value === 'string' && /^\d{4}-\d{2}-\d{2}/.test(value)) {
    ms = Date.parse(value);
  } else throw invalid(field, 'must be a Unix time in seconds or an ISO 8601 string');
  if (!Number.isFinite(ms) || ms > MAX_TIME_MS) throw invalid(field, `is not a valid time: ${JSON.stringify(value)}`);
  return new Date(Math.round(ms)).toISOString();
}

function parseStatus(value: unknown, field: string): NotificationStatus {
  if (typeof value !== 'string' || !NOTIFICATION_STATUSES.includes(value as NotificationStatus))
    throw invalid(field, `must be one of ${NOTIFICATION_STATUSES.join(', ')}, got ${JSON.stringify(value)}`);
  return value as NotificationStatus;
}

/** An object or a non-empty array of objects, each a valid sift query → array; null/undefined → null (broadcast). */
export function parseScope(value: unknown, field: string): JsonObject[] | null {
  if (value === undefined || value === null) return null;
  const list = Array.isArray(value) ? value : [value];
  if (Array.isArray(value) && value.length === 0) throw invalid(field, 'must not be an empty array; leave it out (or null) for a broadcast');
  return list.map((item, i) => {
    const name = Array.isArray(value) ? `${field}[${i}]` : field;
    if (!isObject(item)) throw invalid(name, 'must be an object (or an array of objects)');
    compileQuery(item, name);
    return item;
  });
}

function parsePush(value: unknown, field: string): PushNotificationSpec {
  if (!isObject(value)) throw invalid(field, 'must be an object with payload, subscriptions, delayUntilTimestamp');
  refuseUnknown(value, ['payload', 'subscriptions', 'delayUntilTimestamp'], `${field}.`);
  const payload = value.payload;
  if (payload === undefined) throw missing(`${field}.payload`);
  if (!isObject(payload)) throw invalid(`${field}.payload`, 'must be an object with title and body');
  if (payload.title === undefined) throw missing(`${field}.payload.title`);
  if (typeof payload.title !== 'string') throw invalid(`${field}.payload.title`, 'must be a string');
  if (payload.body === undefined) throw missing(`${field}.payload.body`);
  if (typeof payload.body !== 'string') throw invalid(`${field}.payload.body`, 'must be a string');
  if (payload.badge !== undefined && (typeof payload.badge !== 'number' || !Number.isInteger(payload.badge) || payload.badge < 0))
    throw invalid(`${field}.payload.badge`, 'must be a non-negative integer');
  const spec: PushNotificationSpec = { payload: payload as PushNotificationSpec['payload'] };
  if (value.subscriptions !== undefined) {
    if (!Array.isArray(value.subscriptions)) throw invalid(`${field}.subscriptions`, 'must be an array of subscription ids');
    value.subscriptions.forEach((id, i) => {
      if (typeof id !== 'number' || !Number.isSafeInteger(id) || id <= 0)
        throw invalid(`${field}.subscriptions[${i}]`, 'must be a positive integer (a subscription id)');
    });
    spec.subscriptions = [...new Set(value.subscriptions as number[])];
  }
  if (value.delayUntilTimestamp !== undefined) {
    const t = value.delayUntilTimestamp;
    if (typeof t !== 'number' || !Number.isFinite(t) || t < 0 || t * 1000 > MAX_TIME_MS)
      throw invalid(`${field}.delayUntilTimestamp`, 'must be a Unix time in seconds (a non-negative number, at most year 9999)');
    spec.delayUntilTimestamp = t;
  }
  return spec;
}

const CREATE_FIELDS = ['data', 'scope', 'status', 'orderAt', 'pushNotification'];

/** Validates a create body (single or batch element, `prefix` e.g. `notifications[2].`). */
export function parseCreate(body: unknown, prefix = ''): NotificationCreate {
  if (!isObject(body)) throw invalid(prefix ? prefix.slice(0, -1) : 'body', 'must be an object');
  refuseUnknown(body, CREATE_FIELDS, prefix);
  if (body.data === undefined) throw missing(`${prefix}data`);
  if (!isObject(body.data)) throw invalid(`${prefix}data`, 'must be an object');
  const status = body.status === undefined ? 'draft' : parseStatus(body.status, `${prefix}status`);
  const orderAt = body.orderAt === undefined || body.orderAt === null ? undefined : parseTime(body.orderAt, `${prefix}orderAt`);
  if (status === 'scheduled' && orderAt === undefined)
    throw new HttpError(400, 'MISSING_FIELD', `Field "${prefix}orderAt" is required when status is scheduled (the time to publish at)`, {
      field: `${prefix}orderAt`,
    });
  return {
    data: body.data,
    scope: parseScope(body.scope, `${prefix}scope`),
    status,
    orderAt,
    pushNotification:
      body.pushNotification === undefined || body.pushNotification === null ? null : parsePush(body.pushNotification, `${prefix}pushNotification`),
  };
}

export function parseBatch(body: JsonObject): NotificationCreate[] {
  refuseUnknown(body, ['notifications'], '');
  const list = body.notifications;
  if (list === undefined) throw missing('notifications');
  if (!Array.isArray(list)) throw invalid('notifications', 'must be an array of notifications');
  if (list.length === 0) throw invalid('notifications', 'must not be empty');
  if (list.length > BATCH_MAX)
    throw new HttpError(413, 'BATCH_TOO_LARGE', `Field "notifications" holds ${list.length} notifications; at most ${BATCH_MAX} per batch`);
  return list.map((item, i) => parseCreate(item, `notifications[${i}].`));
}

export function parseUpdate(body: JsonObject): NotificationUpdate {
  refuseUnknown(body, [...CREATE_FIELDS, 'extendData'], '');
  const update: NotificationUpdate = { extendData: false };
  if (body.extendData !== undefined) {
    if (typeof body.extendData !== 'boolean') throw invalid('extendData', 'must be a boolean');
    update.extendData = body.extendData;
  }
  if (body.data !== undefined) {
    if (!isObject(body.data)) throw invalid('data', 'must be an object');
    update.data = body.data;
  } else if (update.extendData) throw missing('data');
  if (body.scope !== undefined) update.scope = parseScope(body.scope, 'scope');
  if (body.status !== undefined) update.status = parseStatus(body.status, 'status');
  if (body.orderAt !== undefined) update.orderAt = parseTime(body.orderAt, 'orderAt');
  if (body.pushNotification !== undefined)
    update.pushNotification = body.pushNotification === null ? null : parsePush(body.pushNotification, 'pushNotification');
  return update;
}

function parseBool(value: unknown, field: string, fromQuery: boolean): boolean {
  if (typeof value === 'boolean') return value;
  if (fromQuery && typeof value === 'string') {
    if (value === 'true' || value === '1' || value === '') return true;
    if (value === 'false' || value === '0') return false;
  }
  throw invalid(field, 'must be a boolean');
}

function parseInteger(value: unknown, field: string, min: number, max: number, fromQuery: boolean): number {
  const n = fromQuery && typeof value === 'string' && /^-?\d+$/.test(value) ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < min || n > max)
    throw invalid(field, `must be an integer from ${min} to ${max}, got ${JSON.stringify(value)}`);
  return n;
}

const LIST_FIELDS = ['limit', 'offset', 'order', 'direction', 'count', 'includeDeleted', 'recipientId', 'unread'];
const BODY_ONLY = ['where', 'scope', 'user'];

/** List parameters from the query string (GET) or the body (POST). */
export function parseList(input: JsonObject, fromQuery: boolean): ListQuery {
  if (fromQuery) {
    for (const key of BODY_ONLY)
      if (input[key] !== undefined)
        throw new HttpError(400, 'UNSUPPORTED_PARAMETER', `Parameter "${key}" is only accepted in the body of POST v1/apps/:appId/notifications`, {
          field: key,
        });
    refuseUnknown(input, LIST_FIELDS, '');
  } else refuseUnknown(input, [...LIST_FIELDS, ...BODY_ONLY], '');

  const query: ListQuery = {
    limit: input.limit === undefined ? LIST_DEFAULT_LIMIT : parseInteger(input.limit, 'limit', 1, LIST_MAX_LIMIT, fromQuery),
    offset: input.offset === undefined ? 0 : parseInteger(input.offset, 'offset', 0, Number.MAX_SAFE_INTEGER, fromQuery),
    order: 'orderAt',
    direction: 'DESC',
    count: input.count === undefined ? false : parseBool(input.count, 'count', fromQuery),
    includeDeleted: input.includeDeleted === undefined ? false : parseBool(input.includeDeleted, 'includeDeleted', fromQuery),
    unread: input.unread === undefined ? false : parseBool(input.unread, 'unread', fromQuery),
  };
  if (input.order !== undefined) {
    if (typeof input.order !== 'string' || !ORDER_FIELDS.includes(input.order as OrderField))
      throw invalid('order', `must be one of ${ORDER_FIELDS.join(', ')}, got ${JSON.stringify(input.order)}`);
    query.order = input.order as OrderField;
  }
  if (input.direction !== undefined) {
    const d = typeof input.direction === 'string' ? input.direction.toUpperCase() : undefined;
    if (d !== 'ASC' && d !== 'DESC') throw invalid('direction', `must be ASC or DESC, got ${JSON.stringify(input.direction)}`);
    query.direction = d;
  }
  if (input.recipientId !== undefined) {
    if (!isGuid(input.recipientId)) throw invalid('recipientId', 'must be a GUID string');
    query.recipientId = input.recipientId.toLowerCase();
  }
  if (query.unread && !query.recipientId) throw missing('recipientId');
  if (input.where !== undefined && input.where !== null) {
    if (!isObject(input.where)) throw invalid('where', 'must be an object (a sift query)');
    compileQuery(input.where, 'where');
    query.where = input.where;
  }
  if (input.scope !== undefined && input.scope !== null) {
    const scopes = Array.isArray(input.scope) ? input.scope : [input.scope];
    scopes.forEach((s, i) => {
      if (!isObject(s)) throw invalid(Array.isArray(input.scope) ? `scope[${i}]` : 'scope', 'must be an object (or an array of objects)');
    });
    query.scope = scopes as JsonObject[];
  }
  if (input.user !== undefined && input.user !== null) {
    if (!isObject(input.user)) throw invalid('user', 'must be an object (the user record scopes are matched against)');
    query.user = input.user;
  }
  return query;
}

export function parseMarkAsRead(body: JsonObject): { recipientId: string; ids: number[] } {
  refuseUnknown(body, ['recipientId', 'entries'], '');
  if (body.recipientId === undefined) throw missing('recipientId');
  if (!isGuid(body.recipientId)) throw invalid('recipientId', 'must be a GUID string');
  if (body.entries === undefined) throw missing('entries');
  if (!Array.isArray(body.entries)) throw invalid('entries', 'must be an array of notification ids');
  if (body.entries.length === 0) throw invalid('entries', 'must not be empty');
  if (body.entries.length > MARK_MAX) throw invalid('entries', `may hold at most ${MARK_MAX} ids`);
  body.entries.forEach((id, i) => {
    if (typeof id !== 'number' || !Number.isSafeInteger(id) || id <= 0) throw invalid(`entries[${i}]`, 'must be a positive integer (a notification id)');
  });
  return { recipientId: body.recipientId.toLowerCase(), ids: [...new Set(body.entries as number[])] };
}

export interface SubscriptionInput {
  device: string;
  platform: string;
  token: string;
  uuid: string;
  user: JsonObject | null;
}

export function parseSubscription(body: JsonObject): SubscriptionInput {
  refuseUnknown(body, ['device', 'platform', 'token', 'uuid', 'user'], '');
  for (const key of ['device', 'platform', 'token'] as const) {
    if (body[key] === undefined) throw missing(key);
    if (typeof body[key] !== 'string' || (body[key] as string).trim() === '') throw invalid(key, 'must be a non-empty string');
  }
  if ((body.token as string).length > 8192) throw invalid('token', 'is longer than 8192 characters');
  if (body.uuid === undefined) throw missing('uuid');
  if (!isGuid(body.uuid)) throw invalid('uuid', 'must be a GUID string (the recipient id of this device)');
  if (body.user !== undefined && body.user !== null && !isObject(body.user)) throw invalid('user', 'must be an object');
  return {
    device: body.device as string,
    platform: body.platform as string,
    token: body.token as string,
    uuid: (body.uuid as string).toLowerCase(),
    user: (body.user as JsonObject | null | undefined) ?? null,
  };
}
