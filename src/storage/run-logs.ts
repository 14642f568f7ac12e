import type { ActionLog } from '../actions/types.js';
import type { ClientContext } from '../core/context.js';
import { clientStore } from './client-store.js';
import { randomId } from './connectivity.js';
import { timeKey } from './local-store.js';

/**
 * Logs of runs made on the device (store `runLogs`), kept until the backend has them. Each record gets a
 * `deviceKey` so that an upload repeated after a lost answer can be recognised by the backend.
 */
export interface StoredRunLog {
  key: string;
  log: ActionLog;
}

/** Stores a device run log; resolves with its key. */
export async function saveRunLog(ctx: ClientContext, log: ActionLog): Promise<string> {
  const store = await clientStore(ctx);
  const key = timeKey(ctx.now());
  await store.put<ActionLog>('runLogs', key, { ...log, deviceKey: log.deviceKey ?? randomId() });
  return key;
}

/** Logs not uploaded yet, oldest first (at most `limit`). */
export async function pendingRunLogs(ctx: ClientContext, limit = Infinity): Promise<StoredRunLog[]> {
  const store = await clientStore(ctx);
  const all = await store.getAll<ActionLog>('runLogs');
  return all.slice(0, limit).map((e) => ({ key: String(e.key), log: e.value }));
}

/** Forgets logs the backend has confirmed. */
export async function removeRunLogs(ctx: ClientContext, keys: readonly string[]): Promise<void> {
  const store = await clientStore(ctx);
  for (const key of keys) await store.delete('runLogs', key);
}

/**
 * Uploads pending logs in batches with `upload` (which the actions module supplies: the route is its own)
 * and removes each batch once accepted. Stops at the first failure, keeping the rest for the next time.
 */
export async function uploadRunLogs(
  ctx: ClientContext,
  upload: (logs: ActionLog[]) => Promise<void>,
  batchSize = 50,
): Promise<{ uploaded: number; remaining: number }> {
  let uploaded = 0;
  for (;;) {
    const batch = await pendingRunLogs(ctx, batchSize);
    if (batch.length === 0) return { uploaded, remaining: 0 };
    try {
      await upload(batch.map((b) => b.log));
    } catch (error) {
      ctx.logger.info(`Device run logs will be uploaded later: ${(error as Error)?.message ?? error}`);
      return { uploaded, remaining: (await pendingRunLogs(ctx)).length };
    }
    await removeRunLogs(ctx, batch.map((b) => b.key));
    uploaded += batch.length;
  }
}
