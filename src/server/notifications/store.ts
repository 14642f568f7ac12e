import type { Queryable, SqlValue } from '../db/database.js';
import type { JsonObject, Notification, NotificationStatus, OrderField, PushNotificationSpec } from './types.js';

/** Data access of notifications and read receipts. */

interface Row {
  id: number;
  app_id: number;
  data: string;
  scope: string | null;
  status: NotificationStatus;
  order_at: string;
  push_notification: string | null;
  published_at: string | null;
  created_at: string;
  updated_at: string;
  deleted_at: string | null;
  read_at?: string | null;
}

const COLUMNS = 'n.id, n.app_id, n.data, n.scope, n.status, n.order_at, n.push_notification, n.published_at, n.created_at, n.updated_at, n.deleted_at';

export function toNotification(row: Row, withReadAt: boolean): Notification {
  const n: Notification = {
    id: row.id,
    appId: row.app_id,
    data: JSON.parse(row.data) as JsonObject,
    status: row.status,
    orderAt: row.order_at,
    publishedAt: row.published_at,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    deletedAt: row.deleted_at,
  };
  if (row.scope !== null) n.scope = JSON.parse(row.scope) as JsonObject[];
  if (row.push_notification !== null) n.pushNotification = JSON.parse(row.push_notification) as PushNotificationSpec;
  if (withReadAt) n.readAt = row.read_at ?? null;
  return n;
}

export interface NotificationRow {
  data: JsonObject;
  scope: JsonObject[] | null;
  status: NotificationStatus;
  orderAt: string;
  pushNotification: PushNotificationSpec | null;
  publishedAt: string | null;
}

const json = (value: unknown) => (value === null || value === undefined ? null : JSON.stringify(value));

export async function insertNotification(db: Queryable, appId: number, row: NotificationRow, now: string): Promise<Notification> {
  const inserted = await db.get<Row>(
    `INSERT INTO notifications (app_id, data, scope, status, order_at, push_notification, published_at, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
     RETURNING id, app_id, data, scope, status, order_at, push_notification, published_at, created_at, updated_at, deleted_at`,
    [appId, JSON.stringify(row.data), json(row.scope), row.status, row.orderAt, json(row.pushNotification), row.publishedAt, now, now],
  );
  return toNotification(inserted!, false);
}

export async function getNotification(db: Queryable, appId: number, id: number): Promise<Notification | undefined> {
  const row = await db.get<Row>(`SELECT ${COLUMNS} FROM notifications n WHERE n.id = ? AND n.app_id = ?`, [id, appId]);
  return row && toNotification(row, false);
}

export async function getNotificationById(db: Queryable, id: number): Promise<Notification | undefined> {
  const row = await db.get<Row>(`SELECT ${COLUMNS} FROM notifications n WHERE n.id = ?`, [id]);
  return row && toNotification(row, false);
}

/** Writes every column of `row`; `expectStatus` guards against a concurrent move (0 changes = lost the race). */
export async function writeNotification(db: Queryable, id: number, row: NotificationRow, now: string, expectStatus: NotificationStatus): Promise<boolean> {
  const result = await db.run(
    `UPDATE notifications SET data = ?, scope = ?, status = ?, order_at = ?, push_notification = ?, published_at = ?, updated_at = ?
     WHERE id = ? AND status = ? AND deleted_at IS NULL`,
    [JSON.stringify(row.data), json(row.scope), row.status, row.orderAt, json(row.pushNotification), row.publishedAt, now, id, expectStatus],
  );
  return result.changes === 1;
}

export async function softDeleteNotification(db: Queryable, appId: number, id: number, now: string): Promise<boolean> {
  const result = await db.run('UPDATE notifications SET deleted_at = ?, updated_at = ? WHERE id = ? AND app_id = ? AND deleted_at IS NULL', [
    now,
    now,
    id,
    appId,
  ]);
  return result.changes === 1;
}

const ORDER_COLUMNS: Record<OrderField, string> = { id: 'n.id', createdAt: 'n.created_at', updatedAt: 'n.updated_at', orderAt: 'n.order_at' };

export interface SqlListFilter {
  appId: number;
  publishedOnly: boolean;
  includeDeleted: boolean;
  /** Only broadcasts (no scope). */
  broadcastsOnly?: boolean;
  /** Only scoped notifications (the rest are broadcasts). */
  scopedOnly?: boolean;
  recipientId?: string;
  unread?: boolean;
  order: OrderField;
  direction: 'ASC' | 'DESC';
}

function whereClause(filter: SqlListFilter): { join: string; where: string; params: SqlValue[] } {
  const params: SqlValue[] = [];
  let join = '';
  if (filter.recipientId !== undefined) {
    join = 'LEFT JOIN notification_receipts r ON r.notification_id = n.id AND r.recipient_id = ?';
    params.push(filter.recipientId);
  }
  const conditions = ['n.app_id = ?'];
  params.push(filter.appId);
  if (filter.publishedOnly) conditions.push("n.status = 'published'");
  if (!filter.includeDeleted) conditions.push('n.deleted_at IS NULL');
  if (filter.broadcastsOnly) conditions.push('n.scope IS NULL');
  if (filter.scopedOnly) conditions.push('n.scope IS NOT NULL');
  if (filter.unread && filter.recipientId !== undefined) conditions.push('r.read_at IS NULL');
  return { join, where: conditions.join(' AND '), params };
}

/** Rows matching the SQL part of a list, in order; `page` pushes limit/offset down when no JS filter follows. */
export async function selectNotifications(db: Queryable, filter: SqlListFilter, page?: { limit: number; offset: number }): Promise<Notification[]> {
  const { join, where, params } = whereClause(filter);
  const column = ORDER_COLUMNS[filter.order];
  const readAt = filter.recipientId !== undefined ? ', r.read_at' : '';
  let sql = `SELECT ${COLUMNS}${readAt} FROM notifications n ${join} WHERE ${where} ORDER BY ${column} ${filter.direction}, n.id ${filter.direction}`;
  if (page) {
    sql += ' LIMIT ? OFFSET ?';
    params.push(page.limit, page.offset);
  }
  const rows = await db.all<Row>(sql, params);
  return rows.map((row) => toNotification(row, filter.recipientId !== undefined));
}

/**
 * The broadcasts of a list counted, and its scoped rows read, in one statement (one snapshot: a notification whose
 * scope changes meanwhile is in one half or the other, never both or neither). For counts by scope: every
 * broadcast passes a scope filter, so only the scoped rows need testing.
 */
export async function countBroadcastsReadScoped(db: Queryable, filter: SqlListFilter): Promise<{ broadcasts: number; scoped: Notification[] }> {
  const counted = whereClause({ ...filter, broadcastsOnly: true, scopedOnly: false });
  const scoped = whereClause({ ...filter, broadcastsOnly: false, scopedOnly: true });
  const readAt = filter.recipientId !== undefined ? ', r.read_at' : '';
  const rows = await db.all<Row & { broadcasts: number | string }>(
    `SELECT c.broadcasts, s.* FROM (SELECT COUNT(*) AS broadcasts FROM notifications n ${counted.join} WHERE ${counted.where}) c ` +
      `LEFT JOIN (SELECT ${COLUMNS}${readAt} FROM notifications n ${scoped.join} WHERE ${scoped.where}) s ON 1 = 1`,
    [...counted.params, ...scoped.params],
  );
  return {
    broadcasts: Number(rows[0]?.broadcasts ?? 0),
    scoped: rows.filter((row) => row.id !== null && row.id !== undefined).map((row) => toNotification(row, filter.recipientId !== undefined)),
  };
}

export async function countNotifications(db: Queryable, filter: SqlListFilter): Promise<number> {
  const { join, where, params } = whereClause(filter);
  const row = await db.get<{ total: number }>(`SELECT COUNT(*) AS total FROM notifications n ${join} WHERE ${where}`, params);
  return Number(row?.total ?? 0);
}

/** Ids of `ids` that exist in the app and are not deleted. */
export async function existingIds(db: Queryable, appId: number, ids: readonly number[]): Promise<Set<number>> {
  if (ids.length === 0) return new Set();
  const rows = await db.all<{ id: number }>(
    `SELECT id FROM notifications WHERE app_id = ? AND deleted_at IS NULL AND id IN (${ids.map(() => '?').join(', ')})`,
    [appId, ...ids],
  );
  return new Set(rows.map((r) => r.id));
}

/** Records receipts; an existing receipt keeps its first read time. Returns how many were new. */
export async function insertReceipts(db: Queryable, recipientId: string, ids: readonly number[], now: string): Promise<number> {
  let added = 0;
  for (const id of ids) {
    const result = await db.run(
      'INSERT INTO notification_receipts (notification_id, recipient_id, read_at) VALUES (?, ?, ?) ON CONFLICT (notification_id, recipient_id) DO NOTHING',
      [id, recipientId, now],
    );
    added += result.changes;
  }
  return added;
}

/** Scheduled notifications due at `now`, oldest first. */
export async function dueScheduled(db: Queryable, now: string, limit: number): Promise<{ id: number; appId: number }[]> {
  return db.all<{ id: number; appId: number }>(
    "SELECT id, app_id AS appId FROM notifications WHERE status = 'scheduled' AND deleted_at IS NULL AND order_at <= ? ORDER BY order_at, id LIMIT ?",
    [now, limit],
  );
}

/** Claims a due scheduled notification by publishing it; only one claimer wins. */
export async function claimScheduled(db: Queryable, id: number, now: string): Promise<boolean> {
  const result = await db.run(
    "UPDATE notifications SET status = 'published', published_at = ?, updated_at = ? WHERE id = ? AND status = 'scheduled' AND deleted_at IS NULL AND order_at <= ?",
    [now, now, id, now],
  );
  return result.changes === 1;
}
