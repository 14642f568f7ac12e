import type { Queryable } from '../db/database.js';
import type { ServerContext } from '../context.js';
import { HttpError } from '../http/errors.js';
import { assertRunLiveIn, type RunLiveness } from '../store/run-liveness.js';
import { createOutbox, type Outbox } from './outbox.js';
import { compileQuery, scopeMatches } from './query.js';
import { createPublisher } from './publish.js';
import {
  countBroadcastsReadScoped,
  countNotifications,
  existingIds,
  getNotification,
  insertNotification,
  insertReceipts,
  selectNotifications,
  softDeleteNotification,
  writeNotification,
  type NotificationRow,
  type SqlListFilter,
} from './store.js';
import { cancelPending, listDeliveries } from './outbox-store.js';
import { listSubscriptions, upsertSubscription } from './subscriptions-store.js';
import { isObject, parseBatch, parseCreate, parseList, parseSubscription, parseUpdate } from './validate.js';
import type {
  Delivery,
  JsonObject,
  ListQuery,
  Notification,
  NotificationCreate,
  NotificationStatus,
  PushSender,
  PushSubscriptionRecord,
  Viewer,
} from './types.js';

/** The status moves an update may make (a same-status update is not a move). */
export const STATUS_MOVES: Readonly<Record<NotificationStatus, readonly NotificationStatus[]>> = {
  draft: ['published', 'scheduled'],
  scheduled: ['published', 'draft'],
  published: ['draft'],
};

export interface NotificationService {
  /** Creates one notification from a create body (validated; 400 naming the field); `run`: of the run creating it (store/run-liveness.ts). */
  create(appId: number, input: unknown, options?: { run?: RunLiveness }): Promise<Notification>;
  /** Creates all or none of `{ notifications: [...] }`. */
  batch(appId: number, body: unknown): Promise<Notification[]>;
  update(appId: number, id: number, input: unknown): Promise<Notification>;
  /** Soft delete; pending pushes of the notification are cancelled. */
  remove(appId: number, id: number): Promise<void>;
  /** Notifications visible to `viewer`, or their count when `query.count`. */
  list(appId: number, viewer: Viewer, query: ListQuery): Promise<Notification[] | number>;
  /** Parses list parameters (query string or body). */
  parseList(input: JsonObject, fromQuery: boolean): ListQuery;
  /** Unread published notifications visible to `user` (broadcasts only without one). */
  unreadCount(appId: number, recipientId: string, user: JsonObject | null): Promise<number>;
  markAsRead(appId: number, recipientId: string, ids: readonly number[]): Promise<number>;
  subscribe(appId: number, input: unknown, ipAddress: string): Promise<{ subscription: PushSubscriptionRecord; created: boolean }>;
  subscriptions(appId: number): Promise<PushSubscriptionRecord[]>;
  deliveries(appId: number, notificationId: number): Promise<Delivery[]>;
  /** The VAPID public key browsers subscribe with (undefined when the sender is not Web Push). */
  publicKey(): Promise<string | undefined>;
  /** Publishes every scheduled notification due at `clock()` and delivers every due push; the timer loop calls it. */
  tick(): Promise<void>;
  /** Starts the timer loop (every `intervalMs`; building the service starts nothing). */
  start(): void;
  /** Stops the loop and waits for deliveries in flight. */
  stop(): Promise<void>;
}

export interface NotificationServiceOptions {
  sender: PushSender;
  /** The VAPID public key browsers subscribe with. */
  publicKey?: () => Promise<string | undefined>;
  /** Real-time interval of the background loop, ms (default 1000); 0 disables the loop. */
  intervalMs?: number;
}

const notFound = (id: number) => new HttpError(404, 'NOTIFICATION_NOT_FOUND', `Notification ${id} not found`);

export function createNotificationService(ctx: ServerContext, options: NotificationServiceOptions): NotificationService {
  const { db } = ctx;
  const publisher = createPublisher(ctx);
  const outbox: Outbox = createOutbox(ctx, options.sender, (appId, recipientId, user) => service.unreadCount(appId, recipientId, user));

  async function checkSubscriptions(tx: Queryable, appId: number, ids: readonly number[] | undefined, field: string) {
    if (!ids?.length) return;
    const known = new Set((await listSubscriptions(tx, appId)).map((s) => s.id));
    ids.forEach((id, i) => {
      if (!known.has(id))
        throw new HttpError(400, 'INVALID_FIELD', `Field "${field}[${i}]": subscription ${id} does not exist in this app`, { field: `${field}[${i}]` });
    });
  }

  async function insertOne(tx: Queryable, appId: number, input: NotificationCreate, field: string): Promise<Notification> {
    await checkSubscriptions(tx, appId, input.pushNotification?.subscriptions, `${field}pushNotification.subscriptions`);
    const now = ctx.nowIso();
    const row: NotificationRow = {
      data: input.data,
      scope: input.scope,
      status: input.status,
      orderAt: input.orderAt ?? now,
      pushNotification: input.pushNotification,
      publishedAt: input.status === 'published' ? now : null,
    };
    const created = await insertNotification(tx, appId, row, now);
    if (created.status === 'published' && created.pushNotification) await publisher.enqueuePush(tx, created, now);
    return created;
  }

  function visibleFilter(query: ListQuery, viewer: Viewer): { sql: Omit<SqlListFilter, 'appId'>; test?: (n: Notification) => boolean } {
    const records = [...(query.scope ?? []), ...(query.user ? [query.user] : [])];
    const byScope = records.length > 0;
    const where = query.where ? compileQuery(query.where, 'where') : undefined;
    const sql: Omit<SqlListFilter, 'appId'> = {
      publishedOnly: !viewer.studio,
      includeDeleted: query.includeDeleted,
      broadcastsOnly: !viewer.studio && !byScope,
      recipientId: query.recipientId,
      unread: query.unread,
      order: query.order,
      direction: query.direction,
    };
    if (!byScope && !where) return { sql };
    return {
      sql,
      test: (n) => (!byScope || !n.scope || scopeMatches(n.scope, records)) && (!where || where(n)),
    };
  }

  const service: NotificationService = {
    async create(appId, input, options = {}) {
      const parsed = parseCreate(input);
      return db.transaction(async (tx) => {
        const created = await insertOne(tx, appId, parsed, '');
        await assertRunLiveIn(tx, db.dialect, options.run);
        return created;
      });
    },

    async batch(appId, body) {
      if (!isObject(body)) throw new HttpError(400, 'INVALID_BODY', 'The request body must be a JSON object with "notifications"');
      const parsed = parseBatch(body);
      return db.transaction(async (tx) => {
        const created: Notification[] = [];
        for (const [i, input] of parsed.entries()) created.push(await insertOne(tx, appId, input, `notifications[${i}].`));
        return created;
      });
    },

    async update(appId, id, input) {
      if (!isObject(input)) throw new HttpError(400, 'INVALID_BODY', 'The request body must be a JSON object');
      const update = parseUpdate(input);
      return db.transaction(async (tx) => {
        const current = await getNotification(tx, appId, id);
        if (!current || current.deletedAt) throw notFound(id);
        const next = update.status ?? current.status;
        if (next !== current.status && !STATUS_MOVES[current.status].includes(next))
          throw new HttpError(422, 'INVALID_STATUS_MOVE', `A ${current.status} notification cannot be moved to ${next}`, {
            field: 'status',
            from: current.status,
            to: next,
          });
        if (next === 'scheduled' && current.status !== 'scheduled' && update.orderAt === undefined)
          throw new HttpError(400, 'MISSING_FIELD', 'Field "orderAt" is required when status becomes scheduled (the time to publish at)', {
            field: 'orderAt',
          });
        if (update.pushNotification) await checkSubscriptions(tx, appId, update.pushNotification.subscriptions, 'pushNotification.subscriptions');
        const now = ctx.nowIso();
        const data = update.data === undefined ? current.data : update.extendData ? { ...current.data, ...update.data } : update.data;
        const row: NotificationRow = {
          data,
          scope: update.scope === undefined ? (current.scope ?? null) : update.scope,
          status: next,
          orderAt: update.orderAt ?? current.orderAt,
          pushNotification: update.pushNotification === undefined ? (current.pushNotification ?? null) : update.pushNotification,
          publishedAt: next !== 'published' ? null : current.status === 'published' ? current.publishedAt : now,
        };
        if (!(await writeNotification(tx, id, row, now, current.status)))
          throw new HttpError(409, 'CONFLICT', `Notification ${id} changed while it was being updated; retry`);
        // Unpublished, or its push replaced or removed: pushes not sent yet (e.g. delayed) are cancelled.
        if (current.status === 'published' && (next !== 'published' || update.pushNotification !== undefined)) await cancelPending(tx, id, now);
        const updated = (await getNotification(tx, appId, id))!;
        const becamePublished = next === 'published' && current.status !== 'published';
        const newPush = next === 'published' && update.pushNotification != null;
        if (updated.pushNotification && (becamePublished || newPush)) await publisher.enqueuePush(tx, updated, now);
        return updated;
      });
    },

    async remove(appId, id) {
      await db.transaction(async (tx) => {
        const current = await getNotification(tx, appId, id);
        if (!current) throw notFound(id);
        if (current.deletedAt) return; // already deleted: nothing to do
        const now = ctx.nowIso();
        await softDeleteNotification(tx, appId, id, now);
        await cancelPending(tx, id, now);
      });
    },

    parseList,

    async list(appId, viewer, query) {
      const { sql, test } = visibleFilter(query, viewer);
      const filter: SqlListFilter = { appId, ...sql };
      if (!test) {
        if (query.count) return countNotifications(db, filter);
        return selectNotifications(db, filter, { limit: query.limit, offset: query.offset });
      }
      if (query.count && !query.where) {
        // A scope filter alone passes every broadcast: those are counted in SQL, only scoped ones are read and
        // tested (a push badge is such a count, once per delivery: a broadcast to N subscribers read every
        // notification of the app N times).
        const { broadcasts, scoped } = await countBroadcastsReadScoped(db, filter);
        return broadcasts + scoped.filter(test).length;
      }
      const matched = (await selectNotifications(db, filter)).filter(test);
      if (query.count) return matched.length;
      return matched.slice(query.offset, query.offset + query.limit);
    },

    async unreadCount(appId, recipientId, user) {
      const query = parseList({ recipientId, unread: true, count: true }, false);
      if (user) query.user = user;
      return (await service.list(appId, { studio: false }, query)) as number;
    },

    async markAsRead(appId, recipientId, ids) {
      return db.transaction(async (tx) => {
        const known = await existingIds(tx, appId, ids);
        const unknown = ids.filter((id) => !known.has(id));
        if (unknown.length)
          throw new HttpError(404, 'NOTIFICATION_NOT_FOUND', `Notification${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')} not found`, {
            ids: unknown,
          });
        return insertReceipts(tx, recipientId, ids, ctx.nowIso());
      });
    },

    async subscribe(appId, input, ipAddress) {
      if (!isObject(input)) throw new HttpError(400, 'INVALID_BODY', 'The request body must be a JSON object');
      const parsed = parseSubscription(input);
      return db.transaction((tx) => upsertSubscription(tx, appId, { ...parsed, ipAddress }, ctx.nowIso()));
    },

    subscriptions: (appId) => listSubscriptions(db, appId),

    async deliveries(appId, notificationId) {
      const n = await getNotification(db, appId, notificationId);
      if (!n) throw notFound(notificationId);
      return listDeliveries(db, notificationId);
    },

    publicKey: async () => (options.publicKey ? options.publicKey() : options.sender.publicKey?.()),

    tick: () =>
      serial(async () => {
        // Deliveries go on even when publishing failed (and the other way round); the first error is reported.
        let failure: unknown;
        await publisher.publishDue().catch((error) => (failure ??= error));
        await outbox.deliverDue().catch((error) => (failure ??= error));
        if (failure !== undefined) throw failure;
      }),

    start() {
      if (timer || intervalMs <= 0) return;
      timer = setInterval(() => {
        if (!busy) service.tick().catch((error) => console.error('[in-app-runtime server] notification tick failed', error));
      }, intervalMs);
      timer.unref();
    },

    async stop() {
      if (timer) clearInterval(timer);
      timer = undefined;
      outbox.stop();
      publisher.stop();
      await Promise.race([running, new Promise((resolve) => setTimeout(resolve, 10_000).unref())]);
    },
  };

  // One tick at a time; an explicit tick() waits for the loop's current one.
  let running: Promise<void> = Promise.resolve();
  let busy = false;
  function serial(fn: () => Promise<void>): Promise<void> {
    const next = running.then(async () => {
      busy = true;
      try {
        await fn();
      } finally {
        busy = false;
      }
    });
    running = next.catch(() => undefined);
    return next;
  }
  const intervalMs = options.intervalMs ?? 1000;
  let timer: ReturnType<typeof setInterval> | undefined;
  return service;
}
