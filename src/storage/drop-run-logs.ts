/**
 * The cap on device run logs waiting to be uploaded (src/storage/run-logs.ts `MAX_RUN_LOGS`), in the lazy `runs`
 * chunk: only a device offline for long, or whose uploads keep failing, gets there. Drops the oldest records
 * past the cap, with one warning per client and app.
 */
import type { ClientContext } from '../core/context.js';
import type { LocalStore } from './local-store.js';

export async function dropOldestRunLogs(ctx: ClientContext, store: LocalStore, max: number, count: number, appId: number): Promise<void> {
  const excess = await store.keys('runLogs', count - max);
  await store.delete('runLogs', excess);
  const capped = ctx.runtime.logsCapped;
  if (!capped.has(appId)) {
    capped.add(appId);
    ctx.logger.warn(`Device run logs: more than ${max} wait to be uploaded, dropping the oldest (${excess.length} now; further drops are not reported)`);
  }
}
