import type { ActionLog } from '../contract/actions.js';
import type { ClientContext } from '../core/context.js';
import { isApiError } from '../http/errors.js';
import { clientStore, perClient, statusChanged } from './client-store.js';
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

/** Stores a device run log (for `appId`, default the app configured now); resolves with its key. */
export async function saveRunLog(ctx: ClientContext, log: ActionLog, appId: number = ctx.appId()): Promise<string> {
  const store = await clientStore(ctx, appId);
  const key = await store.append<ActionLog>('runLogs', { ...log, deviceKey: log.deviceKey ?? randomId() }, ctx.now());
  const keys = await store.keys('runLogs');
  if (keys.length > MAX_RUN_LOGS) {
    const excess = keys.slice(0, keys.length - MAX_RUN_LOGS);
    for (const old of excess) await store.delete('runLogs', old);
    const state = perClient(ctx, `runLogsCapped:${appId}`, () => ({ warned: false }));
    if (!state.warned) {
      state.warned = true;
      ctx.logger.warn(
        `Device run logs: more than ${MAX_RUN_LOGS} wait to be uploaded, dropping the oldest (${excess.length} now; further drops are not reported)`,
      );
    }
  }
  statusChanged(ctx);
  return key;
}

/** Logs not uploaded yet, oldest first (at most `limit`). */
export async function pendingRunLogs(ctx: ClientContext, limit = Infinity, appId: number = ctx.appId()): Promise<StoredRunLog[]> {
  const store = await clientStore(ctx, appId);
  const all = await store.getAll<ActionLog>('runLogs');
  return all.slice(0, limit).map((e) => ({ key: String(e.key), log: e.value }));
}

/** Forgets logs the backend has confirmed. */
export async function removeRunLogs(ctx: ClientContext, keys: readonly string[], appId: number = ctx.appId()): Promise<void> {
  const store = await clientStore(ctx, appId);
  for (const key of keys) await store.delete('runLogs', key);
  statusChanged(ctx);
}

/**
 * An answer that no retry can change: a 4xx other than 401/403/408/425/429 (e.g. 422 ACTION_NOT_FOUND for the
 * log of an action removed since it ran, 400 for a malformed record, 413). Anything else (no network, timeout,
 * 5xx, auth, rate limit, a failure before sending) may pass later.
 */
const refusedForGood = (error: unknown) => isApiError(error) && error.status >= 400 && error.status < 500 && !isRetryable(error);

const describe = (log: ActionLog) => `of action ${String(log.data?.actionId)} at ${log.createdAt} (${log.deviceKey})`;

/**
 * Uploads pending logs in batches with `upload` (which the actions module supplies: the route is its own)
 * and removes each batch once accepted. A failure that may pass later stops the upload, keeping the rest for
 * the next time. The backend takes or refuses a batch whole; when it refuses one for good (`refusedForGood`),
 * the records of that batch are sent one at a time: those it takes are removed as uploaded, those it refuses
 * are dropped with an error log, so one bad record never blocks the ones after it. (Done on the device so that
 * it works with any backend; the extra requests happen only after such a refusal.)
 */
export function uploadRunLogs(
  ctx: ClientContext,
  upload: (logs: ActionLog[]) => Promise<void>,
  batchSize = 50,
  appId: number = ctx.appId(),
): Promise<{ uploaded: number; remaining: number }> {
  // One at a time per client and app (getLogs, the scheduled upload): two at once sent, and dropped, the same records twice.
  const chain = perClient(ctx, `runLogUploads:${appId}`, () => ({ last: Promise.resolve() as Promise<unknown> }));
  const next = chain.last.then(() => uploadNow(ctx, upload, batchSize, appId));
  chain.last = next.catch(() => {});
  return next;
}

async function uploadNow(
  ctx: ClientContext,
  upload: (logs: ActionLog[]) => Promise<void>,
  batchSize: number,
  appId: number,
): Promise<{ uploaded: number; remaining: number }> {
  let uploaded = 0;
  const later = async (error: unknown) => {
    ctx.logger.info(`Device run logs will be uploaded later: ${(error as Error)?.message ?? error}`);
    return { uploaded, remaining: (await pendingRunLogs(ctx, Infinity, appId)).length };
  };
  const drop = async (record: StoredRunLog, error: unknown) => {
    ctx.logger.error(`Device run log ${describe(record.log)} was refused by the backend for good, dropping it: ${(error as Error)?.message ?? error}`);
    await removeRunLogs(ctx, [record.key], appId);
  };
  for (;;) {
    const batch = await pendingRunLogs(ctx, batchSize, appId);
    if (batch.length === 0) return { uploaded, remaining: 0 };
    try {
      await upload(batch.map((b) => b.log));
    } catch (error) {
      if (!refusedForGood(error)) return later(error);
      if (batch.length === 1) {
        await drop(batch[0]!, error);
        continue;
      }
      // One by one, to find the record(s) refused.
      for (const record of batch) {
        try {
          await upload([record.log]);
        } catch (one) {
          if (!refusedForGood(one)) return later(one);
          await drop(record, one);
          continue;
        }
        await removeRunLogs(ctx, [record.key], appId);
        uploaded++;
      }
      continue;
    }
    await removeRunLogs(
      ctx,
      batch.map((b) => b.key),
      appId,
    );
    uploaded += batch.length;
  }
}
