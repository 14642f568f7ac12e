import type { ClientContext } from '../core/context.js';
import { closedError } from '../core/context.js';
import { isApiError, isClientError } from '../http/errors.js';
import { clientStore, statusChanged } from './client-store.js';
import { isOnline, onOnline } from './connectivity.js';
import type { StoreName } from './local-store.js';

/**
 * A persistent, ordered outbox of work for the backend (queued analytics batches, queued server runs).
 * Items are written to the app's local store before anything is sent, sent one at a time in the order they
 * were added, and deleted only once the backend accepted them, so a page reload or a lost connection loses
 * nothing; each item carries its own idempotency key so that a send repeated after a lost answer is
 * applied once by the backend.
 *
 * A failure that a retry may cure (no network, timeout, 5xx, 401/403/408/429) stops the flush and schedules
 * another with exponential backoff (and at once when the browser reports the network back); any other
 * refusal (400, 404, 413, 422…) can never succeed, so that item is dropped and reported.
 */
export interface OutboxOptions<T> {
  ctx: ClientContext;
  /** The app whose queue this is: its items are kept in that app's local store, whatever app is configured later. */
  appId: number;
  store: Extract<StoreName, 'analyticsQueue' | 'runQueue'>;
  /** For log lines and the cross-tab lock. */
  name: string;
  send(item: T): Promise<void>;
  /** Short description of an item for log lines. */
  describe(item: T): string;
  /** Most items kept; beyond it the oldest are dropped with a warning (default 1000). */
  maxItems?: number;
  /** Called with an item the backend refused for good (after it is removed). */
  onDrop?(item: T, error: unknown): void;
  /** Retry delays: first and largest, ms (defaults 1 000 and 300 000). */
  retryMs?: { first: number; max: number };
}

export interface FlushResult {
  sent: number;
  dropped: number;
  /** Items still queued (a retry is scheduled when > 0). */
  remaining: number;
}

export interface Outbox<T> {
  /** Persists `item` at the end of the queue and schedules a flush. Resolves once it is stored. */
  add(item: T): Promise<void>;
  /** Sends what is queued, in order. Concurrent calls share one flush. */
  flush(): Promise<FlushResult>;
  /** What is still queued, oldest first. */
  pending(): Promise<T[]>;
  /** Stops timers and listeners. */
  dispose(): void;
}

export function isRetryable(error: unknown): boolean {
  // No backend URL yet (a page that configures it later): kept until it is, never dropped.
  // A closed client: kept for the app's next client.
  if (isClientError(error)) return error.code === 'NOT_CONFIGURED' || error.code === 'CLIENT_CLOSED';
  if (isApiError(error)) return error.status >= 500 || [401, 403, 408, 425, 429].includes(error.status);
  return true; // network errors, timeouts, anything unexpected: keep the item
}

type Locks = { request<R>(name: string, options: { signal: AbortSignal }, fn: () => Promise<R>): Promise<R> };

export function createOutbox<T>(options: OutboxOptions<T>): Outbox<T> {
  const { ctx } = options;
  const maxItems = options.maxItems ?? 1000;
  const retry = options.retryMs ?? { first: 1000, max: 300_000 };
  let running: Promise<FlushResult> | undefined;
  let again = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let delay = 0;
  // A closed client listens for nothing (an outbox made after close(), by a late flush(), would never be disposed).
  const stopOnline = ctx.runtime.closed
    ? () => {}
    : onOnline(() => {
        delay = 0;
        void flushSafely();
      });

  const storeOf = () => clientStore(ctx, options.appId);

  function schedule(ms: number) {
    if (timer !== undefined) clearTimeout(timer);
    if (ctx.runtime.closed) return; // Client.close(): what is left waits for the app's next client
    timer = setTimeout(() => {
      timer = undefined;
      void flushSafely();
    }, ms);
    (timer as { unref?: () => void }).unref?.();
  }

  function flushSafely(): Promise<FlushResult | undefined> {
    return outbox.flush().catch((error) => {
      ctx.logger.warn(`${options.name}: flushing failed (${(error as Error)?.message ?? error})`);
      return undefined;
    });
  }

  async function flushOnce(): Promise<FlushResult> {
    const store = await storeOf();
    const items = await store.getAll<T>(options.store);
    let sent = 0;
    let dropped = 0;
    for (let i = 0; i < items.length; i++) {
      const { key, value } = items[i]!;
      try {
        await options.send(value);
        sent++;
      } catch (error) {
        if (isRetryable(error)) return { sent, dropped, remaining: items.length - i };
        dropped++;
        ctx.logger.error(`${options.name}: the backend refused ${options.describe(value)} for good, dropping it: ${(error as Error)?.message ?? error}`);
        options.onDrop?.(value, error);
      }
      await store.delete(options.store, [key]);
      statusChanged(ctx);
    }
    return { sent, dropped, remaining: 0 };
  }

  async function runFlush(): Promise<FlushResult> {
    again = false;
    // Closed: fail before waiting for the queue's lock, which another tab's flush may hold for long.
    if (ctx.runtime.closed) throw closedError();
    const total: FlushResult = { sent: 0, dropped: 0, remaining: 0 };
    // Offline: nothing is tried; the "online" listener flushes when the network is back.
    if (!isOnline()) return { ...total, remaining: (await outbox.pending()).length };
    do {
      // Closed after a pass (close() asked for another): this flush is done; what is left waits for the next client.
      if (ctx.runtime.closed) {
        again = false;
        break;
      }
      again = false;
      const locks = (globalThis as { navigator?: { locks?: Locks } }).navigator?.locks;
      // Client.close() ends a wait for the lock (another tab flushing), not a flush that holds it.
      const signal = (ctx.runtime.lockWaits ??= new AbortController()).signal;
      const result = locks ? await locks.request(`in-app-runtime:${options.appId}:${options.store}`, { signal }, flushOnce) : await flushOnce();
      total.sent += result.sent;
      total.dropped += result.dropped;
      total.remaining = result.remaining;
      if (result.remaining > 0) break;
    } while (again);
    if (total.remaining > 0) {
      delay = delay ? Math.min(delay * 2, retry.max) : retry.first;
      schedule(delay);
    } else delay = 0;
    return total;
  }

  const outbox: Outbox<T> = {
    async add(item) {
      const store = await storeOf();
      const entries = await store.getAll<T>(options.store);
      for (let i = 0; i <= entries.length - maxItems; i++) {
        await store.delete(options.store, [entries[i]!.key]);
        ctx.logger.warn(`${options.name}: more than ${maxItems} items queued, dropping the oldest (${options.describe(entries[i]!.value)})`);
      }
      await store.append(options.store, [item], ctx.now());
      statusChanged(ctx);
      if (isOnline()) void flushSafely();
    },
    flush() {
      if (running) {
        // Picked up by the run's `while (again)`, or, when it came after that check, by the chained run below.
        again = true;
        return running;
      }
      const run: Promise<FlushResult> = runFlush().then(
        (result) => {
          running = undefined;
          // A flush() that came after the run's last look at `again` (while it was returning) was handed this
          // run's promise: its items may not have been read. Run again for it and answer with both runs.
          // (Not after a retryable failure: the retry is scheduled, and later items wait behind the failed one.)
          if (!again || result.remaining > 0) {
            again = false;
            return result;
          }
          return outbox.flush().then((next) => ({ sent: result.sent + next.sent, dropped: result.dropped + next.dropped, remaining: next.remaining }));
        },
        (error: unknown) => {
          // The local store failed (e.g. its database was closed by another tab): try again later.
          running = undefined;
          again = false;
          delay = delay ? Math.min(delay * 2, retry.max) : retry.first;
          schedule(delay);
          throw error;
        },
      );
      running = run;
      return run;
    },
    async pending() {
      const store = await storeOf();
      return (await store.getAll<T>(options.store)).map((e) => e.value);
    },
    dispose() {
      stopOnline();
      if (timer !== undefined) clearTimeout(timer);
    },
  };
  return outbox;
}
