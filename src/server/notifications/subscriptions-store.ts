import type { Queryable } from '../db/database.js';
import type { JsonObject, PushSubscriptionRecord } from './types.js';

/** Data access of push subscriptions. */

interface Row {
  id: number;
  app_id: number;
  user_id: number | null;
  user_record: string | null;
  device: string;
  platform: string;
  ip_address: string;
  token: string;
  uuid: string;
  created_at: string;
  updated_at: string;
}

const COLUMNS = 'id, app_id, user_id, user_record, device, platform, ip_address, token, uuid, created_at, updated_at';

const toRecord = (row: Row): PushSubscriptionRecord => ({
  id: row.id,
  appId: row.app_id,
  userId: row.user_id,
  user: row.user_record === null ? null : (JSON.parse(row.user_record) as JsonObject),
  device: row.device,
  platform: row.platform,
  ipAddress: row.ip_address,
  token: row.token,
  uuid: row.uuid,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
});

export interface SubscriptionWrite {
  device: string;
  platform: string;
  token: string;
  uuid: string;
  user: JsonObject | null;
  ipAddress: string;
}

const userIdOf = (user: JsonObject | null) => (user && typeof user.id === 'number' && Number.isSafeInteger(user.id) ? user.id : null);

/** Registers a device; the same token again updates its record (idempotent). */
export async function upsertSubscription(
  db: Queryable,
  appId: number,
  input: SubscriptionWrite,
  now: string,
): Promise<{ subscription: PushSubscriptionRecord; created: boolean }> {
  const existing = await db.get<Row>(`SELECT ${COLUMNS} FROM push_subscriptions WHERE app_id = ? AND token = ?`, [appId, input.token]);
  const user = input.user === null ? null : JSON.stringify(input.user);
  if (existing) {
    const row = await db.get<Row>(
      `UPDATE push_subscriptions SET device = ?, platform = ?, uuid = ?, user_record = ?, user_id = ?, ip_address = ?, updated_at = ?
       WHERE id = ? RETURNING ${COLUMNS}`,
      [input.device, input.platform, input.uuid, user, userIdOf(input.user), input.ipAddress, now, existing.id],
    );
    return { subscription: toRecord(row!), created: false };
  }
  const row = await db.get<Row>(
    `INSERT INTO push_subscriptions (app_id, user_id, user_record, device, platform, ip_address, token, uuid, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING ${COLUMNS}`,
    [appId, userIdOf(input.user), user, input.device, input.platform, input.ipAddress, input.token, input.uuid, now, now],
  );
  return { subscription: toRecord(row!), created: true };
}

export async function listSubscriptions(db: Queryable, appId: number): Promise<PushSubscriptionRecord[]> {
  return (await db.all<Row>(`SELECT ${COLUMNS} FROM push_subscriptions WHERE app_id = ? ORDER BY id`, [appId])).map(toRecord);
}

export async function getSubscription(db: Queryable, id: number): Promise<PushSubscriptionRecord | undefined> {
  const row = await db.get<Row>(`SELECT ${COLUMNS} FROM push_subscriptions WHERE id = ?`, [id]);
  return row && toRecord(row);
}

export async function deleteSubscription(db: Queryable, id: number): Promise<void> {
  await db.run('DELETE FROM push_subscriptions WHERE id = ?', [id]);
}
