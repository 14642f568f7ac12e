import type { ClientContext } from '../core/context.js';
import { entry } from '../core/runtime.js';
import { randomId } from '../storage/connectivity.js';
import { createOutbox, type FlushResult, type Outbox } from '../storage/outbox.js';
import type { AnalyticsEvent } from './types.js';

/**
 * Delivery of analytics events to the backend (`POST v1/apps/:appId/analytics`) in batches: events are
 * gathered for `delayMs` (or until `maxBatch` of them), then the batch is stored in the local
 * `analyticsQueue` and sent; a batch the backend did not take stays queued and is retried (backoff, and
 * at once when the network is back, also after a reload). Each batch has an id the backend dedupes on, so a
 * batch re-sent after a lost answer is stored once.
 */
export interface AnalyticsBatch {
  batchId: string;
  events: AnalyticsEvent[];
}

export interface Delivery {
  /** Adds an event to the batch being gathered (synchronous). */
  add(event: AnalyticsEvent): void;
  /** Stores the batch being gathered at once and sends everything queued. */
  flush(): Promise<FlushResult>;
  /** Batches stored and not yet accepted by the backend. */
  pending(): Promise<AnalyticsBatch[]>;
}

export const BATCH_DELAY_MS = 1000;
export const MAX_BATCH = 100;

function outboxOf(ctx: ClientContext, appId: number): Outbox<AnalyticsBatch> {
  return entry(ctx.runtime.analyticsQueues, appId, () =>
    createOutbox<AnalyticsBatch>({
      ctx,
      appId,
      store: 'analyticsQueue',
      name: 'Analytics',
      describe: (b) => `batch ${b.batchId} of ${b.events.length} event(s)`,
      send: async (batch) => {
        await ctx.http.request('POST', `v1/apps/${appId}/analytics`, { json: batch, headers: { 'Idempotency-Key': batch.batchId } });
      },
    }),
  );
}

/** Sends the analytics batches queued on this device (e.g. by an earlier page load). */
export function flushAnalyticsQueue(ctx: ClientContext): Promise<FlushResult> {
  return outboxOf(ctx, ctx.appId()).flush();
}

export function createDelivery(ctx: ClientContext, options: { delayMs?: number; maxBatch?: number } = {}): Delivery {
  const delayMs = options.delayMs ?? BATCH_DELAY_MS;
  const maxBatch = options.maxBatch ?? MAX_BATCH;
  /** Events gathered per app (the app id may change through configure()). */
  const gathering = new Map<number, AnalyticsEvent[]>();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let storing: Promise<void> = Promise.resolve();

  function store(): Promise<void> {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    const batches = [...gathering.entries()];
    gathering.clear();
    // Batches are stored one after another, in the order they were gathered.
    storing = storing.then(async () => {
      for (const [appId, events] of batches) {
        for (let i = 0; i < events.length; i += maxBatch) {
          try {
            await outboxOf(ctx, appId).add({ batchId: randomId(), events: events.slice(i, i + maxBatch) });
          } catch (error) {
            ctx.logger.error(`Analytics: ${events.length} event(s) could not be stored for delivery: ${(error as Error)?.message ?? error}`);
          }
        }
      }
    });
    return storing;
  }

  // Leaving the page: store what is gathered now (IndexedDB writes started here complete after pagehide).
  const target = globalThis as { addEventListener?: Window['addEventListener']; removeEventListener?: Window['removeEventListener']; document?: Document };
  const onHide = () => target.document?.visibilityState === 'hidden' && store();
  target.addEventListener?.('pagehide', store);
  target.document?.addEventListener?.('visibilitychange', onHide);
  // Client.close(): what is gathered is stored, and the page's events are no longer heard.
  ctx.runtime.stops.push(() => {
    target.removeEventListener?.('pagehide', store);
    target.document?.removeEventListener?.('visibilitychange', onHide);
    return store();
  });

  return {
    add(event) {
      const appId = ctx.appId();
      const list = gathering.get(appId) ?? [];
      list.push(event);
      gathering.set(appId, list);
      if (list.length >= maxBatch) void store();
      else if (timer === undefined) {
        timer = setTimeout(() => void store(), delayMs);
        (timer as { unref?: () => void }).unref?.();
      }
    },
    async flush() {
      await store();
      return outboxOf(ctx, ctx.appId()).flush();
    },
    pending() {
      return outboxOf(ctx, ctx.appId()).pending();
    },
  };
}
