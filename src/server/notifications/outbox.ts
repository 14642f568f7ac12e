import { randomUUID } from 'node:crypto';
import type { ServerContext } from '../context.js';
import { cancelPendingForSubscription, claimDelivery, dueDeliveries, finishDelivery, type OutboxRow } from './outbox-store.js';
import { getNotificationById } from './store.js';
import { deleteSubscription, getSubscription } from './subscriptions-store.js';
import type { JsonObject, PushSender } from './types.js';

/** Retry policy of failed deliveries. */
export const PUSH_RETRY = {
  /** Attempts before a delivery is given up as failed. */
  maxAttempts: 5,
  /** Wait after the first failure; doubled after each further one. */
  baseDelayMs: 30_000,
  maxDelayMs: 3_600_000,
  /** How long a claimed delivery belongs to its instance before another may take it over. */
  leaseMs: 5 * 60_000,
  /** Deliveries sent at the same time. */
  concurrency: 4,
} as const;

export const retryDelayMs = (failedAttempts: number) => Math.min(PUSH_RETRY.baseDelayMs * 2 ** Math.max(0, failedAttempts - 1), PUSH_RETRY.maxDelayMs);

export interface Outbox {
  /** Claims and sends every delivery due at `clock()`. */
  deliverDue(): Promise<number>;
  /** No new claims; deliveries in flight finish and are recorded. */
  stop(): void;
}

type UnreadCount = (appId: number, recipientId: string, user: JsonObject | null) => Promise<number>;

export function createOutbox(ctx: ServerContext, sender: PushSender, unreadCount: UnreadCount): Outbox {
  const claimId = randomUUID();
  let stopped = false;

  async function deliver(row: OutboxRow): Promise<void> {
    const attempt = row.attempts + 1;
    const finish = (init: Omit<Parameters<typeof finishDelivery>[1], 'id' | 'claimId' | 'attempt' | 'now'>) =>
      ctx.db.transaction((tx) => finishDelivery(tx, { id: row.id, claimId, attempt, now: ctx.nowIso(), ...init }));

    const notification = await getNotificationById(ctx.db, row.notificationId);
    if (!notification || notification.deletedAt || notification.status !== 'published') {
      await finish({ state: 'cancelled', badge: null, error: 'The notification is no longer published', attempted: false });
      return;
    }
    const subscription = await getSubscription(ctx.db, row.subscriptionId);
    if (!subscription) {
      await finish({ state: 'failed', badge: null, error: `Subscription ${row.subscriptionId} no longer exists`, attempted: false });
      return;
    }
    const badge = typeof row.payload.badge === 'number' ? row.payload.badge : await unreadCount(row.appId, subscription.uuid, subscription.user);
    try {
      await sender.send({
        deliveryId: row.id,
        attempt,
        appId: row.appId,
        notificationId: row.notificationId,
        subscription,
        payload: { ...row.payload, badge, notificationId: row.notificationId },
      });
    } catch (error) {
      const message = (error as Error)?.message ?? String(error);
      const permanent = (error as { permanent?: boolean })?.permanent === true;
      const gone = (error as { subscriptionGone?: boolean })?.subscriptionGone === true;
      const giveUp = permanent || gone || attempt >= PUSH_RETRY.maxAttempts;
      const failure = {
        state: giveUp ? ('failed' as const) : ('pending' as const),
        badge,
        error: message,
        nextAttemptAt: giveUp ? undefined : new Date(ctx.clock() + retryDelayMs(attempt)).toISOString(),
        attempted: true,
      };
      if (!gone) return void (await finish(failure));
      // The push service dropped the subscription: forget it, so no later notification targets it.
      await ctx.db.transaction(async (tx) => {
        await finishDelivery(tx, { id: row.id, claimId, attempt, now: ctx.nowIso(), ...failure });
        await cancelPendingForSubscription(tx, subscription.id, ctx.nowIso());
        await deleteSubscription(tx, subscription.id);
      });
      return;
    }
    await finish({ state: 'sent', badge, error: null, attempted: true });
  }

  return {
    async deliverDue() {
      let handled = 0;
      for (;;) {
        if (stopped) return handled;
        const now = ctx.nowIso();
        const ids = await dueDeliveries(ctx.db, now, 100);
        let next = 0;
        const worker = async () => {
          while (!stopped && next < ids.length) {
            const id = ids[next++]!;
            const claimNow = ctx.nowIso();
            const row = await claimDelivery(ctx.db, id, claimId, claimNow, new Date(ctx.clock() + PUSH_RETRY.leaseMs).toISOString());
            if (!row) continue; // another instance (or an earlier pass) has it
            handled++;
            try {
              await deliver(row);
            } catch (error) {
              console.error('[in-app-runtime server] push delivery %d could not be recorded', row.id, error);
            }
          }
        };
        await Promise.all(Array.from({ length: Math.min(PUSH_RETRY.concurrency, ids.length) }, worker));
        if (ids.length < 100) return handled;
      }
    },
    stop() {
      stopped = true;
    },
  };
}
