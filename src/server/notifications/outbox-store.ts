import type { Queryable } from '../db/database.js';
import type { Delivery, DeliveryState, PushPayload } from './types.js';

/** Data access of the persistent push outbox and its attempt history. */

interface Row {
  id: number;
  app_id: number;
  notification_id: number;
  subscription_id: number;
  payload: string;
  state: DeliveryState;
  attempts: number;
  next_attempt_at: string;
  badge: number | null;
  last_error: string | null;
  sent_at: string | null;
  claim_id: string | null;
}

const COLUMNS = 'id, app_id, notification_id, subscription_id, payload, state, attempts, next_attempt_at, badge, last_error, sent_at, claim_id';

export interface OutboxRow {
  id: number;
  appId: number;
  notificationId: number;
  subscriptionId: number;
  payload: PushPayload;
  attempts: number;
}

export async function enqueueDeliveries(
  db: Queryable,
  init: { appId: number; notificationId: number; subscriptionIds: readonly number[]; payload: PushPayload; notBefore: string; now: string },
): Promise<number> {
  const payload = JSON.stringify(init.payload);
  for (const subscriptionId of init.subscriptionIds)
    await db.run(
      `INSERT INTO push_outbox (app_id, notification_id, subscription_id, payload, state, attempts, next_attempt_at, created_at, updated_at)
       VALUES (?, ?, ?, ?, 'pending', 0, ?, ?, ?)`,
      [init.appId, init.notificationId, subscriptionId, payload, init.notBefore, init.now, init.now],
    );
  return init.subscriptionIds.length;
}

/** Pending deliveries of a notification will not be sent (it was unpublished or deleted). */
/** The pending pushes to a subscription that no longer exists are cancelled (their notifications stay as they are). */
export async function cancelPendingForSubscription(db: Queryable, subscriptionId: number, now: string): Promise<void> {
  await db.run(
    "UPDATE push_outbox SET state = 'cancelled', last_error = 'The subscription no longer exists', updated_at = ? WHERE subscription_id = ? AND state = 'pending'",
    [now, subscriptionId],
  );
}

export async function cancelPending(db: Queryable, notificationId: number, now: string): Promise<void> {
  await db.run("UPDATE push_outbox SET state = 'cancelled', updated_at = ? WHERE notification_id = ? AND state = 'pending'", [now, notificationId]);
}

/** Candidates: pending and due, or left `sending` by an instance whose lease ran out. */
export async function dueDeliveries(db: Queryable, now: string, limit: number): Promise<number[]> {
  const rows = await db.all<{ id: number }>(
    `SELECT id FROM push_outbox
     WHERE (state = 'pending' AND next_attempt_at <= ?) OR (state = 'sending' AND lease_until <= ?)
     ORDER BY next_attempt_at, id LIMIT ?`,
    [now, now, limit],
  );
  return rows.map((r) => r.id);
}

/** Claims one delivery for `claimId` until `leaseUntil`; only one claimer wins. */
export async function claimDelivery(db: Queryable, id: number, claimId: string, now: string, leaseUntil: string): Promise<OutboxRow | undefined> {
  const row = await db.get<Row>(
    `UPDATE push_outbox SET state = 'sending', claim_id = ?, lease_until = ?, updated_at = ?
     WHERE id = ? AND ((state = 'pending' AND next_attempt_at <= ?) OR (state = 'sending' AND lease_until <= ?))
     RETURNING ${COLUMNS}`,
    [claimId, leaseUntil, now, id, now, now],
  );
  if (!row) return undefined;
  return {
    id: row.id,
    appId: row.app_id,
    notificationId: row.notification_id,
    subscriptionId: row.subscription_id,
    payload: JSON.parse(row.payload) as PushPayload,
    attempts: row.attempts,
  };
}

/** Records the outcome of an attempt made under `claimId` (ignored when the claim was lost). */
export async function finishDelivery(
  db: Queryable,
  init: {
    id: number;
    claimId: string;
    attempt: number;
    now: string;
    state: 'sent' | 'pending' | 'failed' | 'cancelled';
    badge: number | null;
    error: string | null;
    nextAttemptAt?: string;
    /** Whether a send was attempted (cancellations record no attempt). */
    attempted: boolean;
  },
): Promise<boolean> {
  const result = await db.run(
    `UPDATE push_outbox SET state = ?, attempts = ?, badge = COALESCE(?, badge), last_error = ?, sent_at = ?,
       next_attempt_at = COALESCE(?, next_attempt_at), lease_until = NULL, updated_at = ?
     WHERE id = ? AND claim_id = ? AND state = 'sending'`,
    [
      init.state,
      init.attempted ? init.attempt : init.attempt - 1,
      init.badge,
      init.error,
      init.state === 'sent' ? init.now : null,
      init.nextAttemptAt ?? null,
      init.now,
      init.id,
      init.claimId,
    ],
  );
  if (result.changes === 1 && init.attempted)
    await db.run('INSERT INTO push_attempts (outbox_id, attempt, attempted_at, ok, error) VALUES (?, ?, ?, ?, ?)', [
      init.id,
      init.attempt,
      init.now,
      init.state === 'sent' ? 1 : 0,
      init.error,
    ]);
  return result.changes === 1;
}

export async function listDeliveries(db: Queryable, notificationId: number): Promise<Delivery[]> {
  const rows = await db.all<Row>(`SELECT ${COLUMNS} FROM push_outbox WHERE notification_id = ? ORDER BY id`, [notificationId]);
  const attempts = await db.all<{ outbox_id: number; attempt: number; attempted_at: string; ok: number; error: string | null }>(
    'SELECT a.outbox_id, a.attempt, a.attempted_at, a.ok, a.error FROM push_attempts a JOIN push_outbox o ON o.id = a.outbox_id WHERE o.notification_id = ? ORDER BY a.id',
    [notificationId],
  );
  // Grouped once: a broadcast has a delivery per subscriber, and filtering every attempt per delivery was quadratic.
  const history = new Map<number, { attempt: number; at: string; ok: boolean; error: string | null }[]>();
  for (const a of attempts) {
    let list = history.get(a.outbox_id);
    if (!list) history.set(a.outbox_id, (list = []));
    list.push({ attempt: a.attempt, at: a.attempted_at, ok: a.ok === 1, error: a.error });
  }
  return rows.map((row) => ({
    id: row.id,
    notificationId: row.notification_id,
    subscriptionId: row.subscription_id,
    state: row.state,
    attempts: row.attempts,
    nextAttemptAt: row.next_attempt_at,
    sentAt: row.sent_at,
    badge: row.badge,
    lastError: row.last_error,
    payload: JSON.parse(row.payload) as PushPayload,
    history: history.get(row.id) ?? [],
  }));
}
