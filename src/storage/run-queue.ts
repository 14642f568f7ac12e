import type { ClientContext } from '../core/context.js';
import { isNetworkError, isTimeoutError } from '../http/errors.js';
import { entry } from '../core/runtime.js';
import { remember } from './run-state.js';
import { isOnline, randomId } from './connectivity.js';
import { createOutbox, type FlushResult, type Outbox } from './outbox.js';

/**
 * Queued requests for server runs (`Client.App.Actions.run()` of a server action while offline). Each
 * request keeps the `Idempotency-Key` it was given when it was first made, so a send repeated after a lost
 * answer or a page reload is applied once by the backend; requests are sent in the order they were made.
 */
export interface QueuedRequest {
  method: 'POST' | 'PUT' | 'DELETE';
  /** Path relative to the base URL, e.g. `v1/apps/1/tasks/sync/run`. */
  path: string;
  json?: unknown;
  idempotencyKey: string;
  /** ISO time it was first made. */
  queuedAt: string;
  /** What it is, for log lines (e.g. `run of "sync"`). */
  label: string;
}

export interface SendOrQueueResult<T> {
  /** true when the request was stored to be sent later (the device is offline). */
  queued: boolean;
  /** The backend's answer when it was sent now. */
  response?: T;
  idempotencyKey: string;
}

function queueOf(ctx: ClientContext): Outbox<QueuedRequest> {
  const appId = ctx.appId();
  const { runs } = ctx.runtime;
  return entry(ctx.runtime.runQueues, appId, () =>
    createOutbox<QueuedRequest>({
      ctx,
      appId,
      store: 'runQueue',
      name: 'Queued server runs',
      describe: (r) => `${r.label} queued at ${r.queuedAt}`,
      send: async (r) => {
        const answer = await ctx.http.request<{ runId?: number }>(r.method, r.path, { json: r.json, headers: { 'Idempotency-Key': r.idempotencyKey } });
        if (answer?.runId) {
          remember(runs.sent, r.idempotencyKey, answer.runId);
          remember(runs.keys, answer.runId, r.idempotencyKey);
        }
      },
      // What getRun answers for the handle of a run the backend refused for good.
      onDrop: (r, error) =>
        remember(runs.sent, r.idempotencyKey, {
          code: (error as { code?: string })?.code || 'RUN_FAILED',
          message: (error as Error)?.message ?? String(error),
          queuedAt: r.queuedAt,
        }),
    }),
  );
}

/**
 * Sends a request that must reach the backend exactly once, now when the device is online, else later:
 * when the device is offline (or the request fails for lack of network) the request is stored and sent
 * when the device is back online, after any request queued before it. Backend refusals (4xx) of a request
 * sent now are thrown as usual.
 */
export async function sendOrQueue<T = unknown>(
  ctx: ClientContext,
  request: Omit<QueuedRequest, 'queuedAt' | 'idempotencyKey'> & { idempotencyKey?: string },
): Promise<SendOrQueueResult<T>> {
  const queued: QueuedRequest = { ...request, idempotencyKey: request.idempotencyKey ?? randomId(), queuedAt: new Date(ctx.now()).toISOString() };
  const queue = queueOf(ctx);
  // Requests queued earlier go first: while any wait, this one waits behind them.
  if (isOnline() && (await queue.pending()).length === 0) {
    try {
      const response = await ctx.http.request<T>(queued.method, queued.path, {
        json: queued.json,
        headers: { 'Idempotency-Key': queued.idempotencyKey },
      });
      return { queued: false, response, idempotencyKey: queued.idempotencyKey };
    } catch (error) {
      if (!isNetworkError(error) && !isTimeoutError(error)) throw error;
      ctx.logger.info(`${queued.label}: the backend is unreachable, queued to be sent when back online`);
    }
  }
  await queue.add(queued);
  return { queued: true, idempotencyKey: queued.idempotencyKey };
}

/** Sends the queued requests now (also done automatically when the device comes back online). */
export function flushQueuedRequests(ctx: ClientContext): Promise<FlushResult> {
  return queueOf(ctx).flush();
}

/** The requests still waiting, oldest first. */
export function queuedRequests(ctx: ClientContext): Promise<QueuedRequest[]> {
  return queueOf(ctx).pending();
}
