/** The upload of device run logs (Client.App.Actions.getLogs, which reads them, is in the lazy `runs` chunk: src/actions/read-logs.ts). */
import type { ClientContext } from '../core/context.js';
import { entry } from '../core/runtime.js';
import { onOnline } from '../storage/connectivity.js';
import { uploadRunLogs } from '../storage/run-logs.js';

/** Sends the device's pending run logs (`POST tasks/logs { logs }`); kept for later when offline. */
export async function uploadDeviceLogs(ctx: ClientContext): Promise<{ uploaded: number; remaining: number }> {
  // One app throughout: the logs read from its store go to its route, even if configure({ appId }) comes meanwhile.
  const appId = ctx.appId();
  return uploadRunLogs(
    ctx,
    async (logs) => {
      await ctx.http.request('POST', `v1/apps/${appId}/tasks/logs`, {
        json: { logs: logs.map((l) => ({ deviceKey: l.deviceKey, type: l.type, createdAt: l.createdAt, data: l.data })) },
      });
    },
    undefined,
    appId,
  );
}

/** Wait before an upload after a device run, so the runs of a burst (analytics triggers) share one request. */
export const LOG_UPLOAD_DELAY_MS = 250;

/**
 * Uploads the pending device run logs soon: at most one upload at a time per client, and runs in a burst
 * share one request instead of one each. A failed upload keeps the logs for the next run, `getLogs()`, the
 * next page load or the network coming back.
 */
export function scheduleLogUpload(ctx: ClientContext, delayMs = LOG_UPLOAD_DELAY_MS): void {
  if (ctx.runtime.closed) return;
  const state = entry(ctx.runtime.logSchedules, ctx.appId(), () => {
    ctx.runtime.stops.push(onOnline(() => scheduleLogUpload(ctx, 0)));
    return { running: false, again: false };
  });
  if (state.running) return void (state.again = true);
  if (state.timer !== undefined) return;
  state.timer = setTimeout(async () => {
    state.timer = undefined;
    state.running = true;
    try {
      await uploadDeviceLogs(ctx);
    } catch (error) {
      ctx.logger.info(`Device run logs will be uploaded later: ${(error as Error)?.message ?? error}`);
    } finally {
      state.running = false;
      if (state.again) {
        state.again = false;
        scheduleLogUpload(ctx, delayMs);
      }
    }
  }, delayMs);
}
