import type { ActionLog } from '../contract/actions.js';
import type { ClientContext } from '../core/context.js';
import { isApiError } from '../http/errors.js';
import { loadChunk } from '../core/lazy.js';
import { clientStore, statusChanged } from './client-store.js';
import { randomId } from './connectivity.js';
import { isRetryable } from './outbox.js';

/**
 * Logs of runs made on the device (store `runLogs`), kept until the backend has them. Each record gets a
 * `deviceKey` so that an upload repeated after a lost answer can be recognised by the backend.
 *
 * At most MAX_RUN_LOGS records are kept (a device offline for long, or whose uploads keep failing, must not
 * fill its storage): beyond it the oldest are dropped, with one warning per client and app.
 */
export interface StoredRunLog {
  key: string;
  log: ActionLog;
}

export const MAX_RUN_LOGS = 1000;

/**
 * Stores a device run log (for `appId`, default the app configured now); resolves once stored. Records handed over
 * while a write is under way go together in the next transaction (one transaction per batch, not per run: a run
 * does not wait for the last run's write; docs/actions.md "Logs").
 */
export function saveRunLog(ctx: ClientContext, log: ActionLog, appId: number = ctx.appId()): Promise<void> {
  const writes = ctx.runtime.logWrites;
  let w = writes.get(appId);
  if (!w) writes.set(appId, (w = { logs: [], done: Promise.resolve() }));
  const batch = w;
  // A copy taken now: the run's result is the caller's from here on (IndexedDB would copy it only at the write).
  batch.logs.push(structuredClone({ ...log, deviceKey: log.deviceKey ?? randomId() }));
  if (!batch.next) {
    batch.next = batch.done.then(async () => {
      batch.next = undefined;
      const logs = batch.logs.splice(0);
      const store = await clientStore(ctx, appId);
      // Counted in the write's transaction, which reads no keys: reading them all on every run cost 1–4 ms at a few
      // hundred pending (fake-indexeddb).
      const { count } = await store.append('runLogs', logs, ctx.now());
      // Stored: a failed drop (the chunk not loading offline, say) is said, not the write's failure; the next write tries again.
      if (count > MAX_RUN_LOGS)
        await loadChunk('runs', ctx.config().assetsUrl)
          .then((chunk) => chunk.dropOldestRunLogs(ctx, store, MAX_RUN_LOGS, count, appId))
          .catch((error: unknown) => ctx.logger.warn('Device run logs: the oldest could not be dropped', error));
      statusChanged(ctx);
    });
    batch.done = batch.next.catch(() => undefined);
  }
  return batch.next;
}

/** Resolves once the logs handed to `saveRunLog` so far are stored (or failed): what reads the store waits for them. */
export const runLogsWritten = (ctx: ClientContext, appId: number = ctx.appId()): Promise<void> => ctx.runtime.logWrites.get(appId)?.done ?? Promise.resolve();

/** Logs not uploaded yet, oldest first (at most `limit`). */
export async function pendingRunLogs(ctx: ClientContext, limit = Infinity, appId: number = ctx.appId()): Promise<StoredRunLog[]> {
  await runLogsWritten(ctx, appId);
  const store = await clientStore(ctx, appId);
  // Only the first `limit` are read: the upload asks for a batch at a time, and reading every pending value for
  // each batch cost as many clones as logs per batch (fake-indexeddb: 5 % of a page's time at 800 runs/s).
  const first = await store.getAll<ActionLog>('runLogs', Number.isFinite(limit) ? limit : undefined);
  return first.map((e) => ({ key: String(e.key), log: e.value }));
}

/** Forgets logs the backend has confirmed. */
export async function removeRunLogs(ctx: ClientContext, keys: readonly string[], appId: number = ctx.appId()): Promise<void> {
  const store = await clientStore(ctx, appId);
  await store.delete('runLogs', keys);
  statusChanged(ctx);
}

/**
 * An answer that no retry can change: a 4xx other than 401/403/408/425/429 (e.g. 422 ACTION_NOT_FOUND for the
 * log of an action removed since it ran, 400 for a malformed record, 413). Anything else (no network, timeout,
 * 5xx, auth, rate limit, a failure before sending) may pass later.
 */
const refusedForGood = (error: unknown) => isApiError(error) && error.status >= 400 && error.status < 500 && !isRetryable(error);

/**
 * Uploads pending logs in batches with `upload` (which the actions module supplies: the route is its own), one
 * upload at a time per client and app (getLogs, the scheduled upload: two at once sent, and dropped, the same
 * records twice). The loop (src/storage/upload-logs.ts) is in the lazy `runs` chunk: it runs only after device
 * runs, which load the engine anyway, or when logs are pending.
 */
export function uploadRunLogs(
  ctx: ClientContext,
  upload: (logs: ActionLog[]) => Promise<void>,
  batchSize = 50,
  appId: number = ctx.appId(),
): Promise<{ uploaded: number; remaining: number }> {
  const uploads = ctx.runtime.logUploads;
  const next = (uploads.get(appId) ?? Promise.resolve()).then(async () =>
    // Nothing pending (most page loads): no chunk to fetch.
    (await pendingRunLogs(ctx, 1, appId)).length === 0
      ? { uploaded: 0, remaining: 0 }
      : (await loadChunk('runs', ctx.config().assetsUrl)).uploadLogs(
          {
            logger: ctx.logger,
            pending: (limit) => pendingRunLogs(ctx, limit, appId),
            count: async () => (await clientStore(ctx, appId)).count('runLogs'),
            remove: (keys) => removeRunLogs(ctx, keys, appId),
            refusedForGood,
          },
          upload,
          batchSize,
        ),
  );
  uploads.set(
    appId,
    next.catch(() => {}),
  );
  return next;
}
