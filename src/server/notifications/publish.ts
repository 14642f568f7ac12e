import type { Queryable } from '../db/database.js';
import type { ServerContext } from '../context.js';
import { enqueueDeliveries } from './outbox-store.js';
import { scopeMatches } from './query.js';
import { claimScheduled, dueScheduled, getNotificationById } from './store.js';
import { listSubscriptions } from './subscriptions-store.js';
import type { Notification } from './types.js';

const BATCH = 100;

/** Publishing side effects: the scheduler and the push fan-out into the outbox. */
export function createPublisher(ctx: ServerContext) {
  let stopped = false;

  /**
   * One outbox row per targeted subscription: the listed `subscriptions`, or
   * every subscription of the app whose user is in scope (all of them for a
   * broadcast). Runs in the transaction that publishes, so a publication and
   * its deliveries are stored together or not at all.
   */
  async function enqueuePush(tx: Queryable, notification: Notification, now: string): Promise<number> {
    const push = notification.pushNotification;
    if (!push) return 0;
    const all = await listSubscriptions(tx, notification.appId);
    const targets = push.subscriptions
      ? all.filter((s) => push.subscriptions!.includes(s.id))
      : notification.scope
        ? all.filter((s) => s.user !== null && scopeMatches(notification.scope!, [s.user]))
        : all;
    const delayMs = push.delayUntilTimestamp === undefined ? 0 : push.delayUntilTimestamp * 1000;
    const notBefore = new Date(Math.max(Date.parse(now), delayMs)).toISOString();
    return enqueueDeliveries(tx, {
      appId: notification.appId,
      notificationId: notification.id,
      subscriptionIds: targets.map((s) => s.id),
      payload: push.payload,
      notBefore,
      now,
    });
  }

  /** Publishes scheduled notifications whose orderAt has come; each is claimed through the database. */
  async function publishDue(): Promise<number> {
    let published = 0;
    for (;;) {
      const now = ctx.nowIso();
      const due = await dueScheduled(ctx.db, now, BATCH);
      let failed = 0;
      for (const { id } of due) {
        if (stopped) return published;
        try {
          const won = await ctx.db.transaction(async (tx) => {
            if (!(await claimScheduled(tx, id, now))) return false;
            const notification = await getNotificationById(tx, id);
            if (notification?.pushNotification) await enqueuePush(tx, notification, now);
            return true;
          });
          if (won) published++;
        } catch (error) {
          // One notification that cannot be published (rolled back, tried again next tick) stops no other.
          failed++;
          console.error('[in-app-runtime server] scheduled notification %d could not be published', id, error);
        }
      }
      if (due.length < BATCH || failed === due.length) return published;
    }
  }

  return {
    enqueuePush,
    publishDue,
    stop() {
      stopped = true;
    },
  };
}
