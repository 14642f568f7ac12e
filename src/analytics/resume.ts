import type { ClientContext } from '../core/context.js';
import { scheduleLogUpload } from '../actions/logs.js';
import { flushQueuedRequests } from '../storage/run-queue.js';
import { flushAnalyticsQueue } from './delivery.js';

/**
 * Work left queued on this device by an earlier page load (server runs made offline, analytics batches not
 * delivered, device run logs not uploaded) is picked up when the client starts: sent at once when online, else when the network is back.
 * Only where a persistent local store exists (IndexedDB) and an app is configured; nothing happens otherwise.
 */
export function resumeQueuedWork(ctx: ClientContext, again = false): void {
  if (!(globalThis as { indexedDB?: unknown }).indexedDB) return;
  setTimeout(() => {
    const appId = ctx.config().appId;
    if (appId === undefined || ctx.runtime.closed) return;
    // Once per client and app: called again by configure() when the app is set or changed later.
    const done = ctx.runtime.resumed;
    if (done.has(appId) && !again) return;
    done.add(appId);
    const warn = (what: string) => (error: unknown) => ctx.logger.warn(`${what} could not be resumed: ${(error as Error)?.message ?? error}`);
    // Creating the queues registers their "back online" listeners; flushing sends what is there (when online).
    flushQueuedRequests(ctx).catch(warn('Queued server runs'));
    flushAnalyticsQueue(ctx).catch(warn('Queued analytics'));
    scheduleLogUpload(ctx, 0);
  }, 0);
}
