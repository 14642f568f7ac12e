import type { RunsHost } from '../actions/runs-host.js';

/**
 * `Client.close()` (docs/api.md "Closing a client"), in the lazy `runs` chunk. `client.ts` has already set
 * `runtime.closed`, so nothing new reaches the network or opens a store (`CLIENT_CLOSED`). In order:
 * 1. device runs in progress finish (each within its time limit) and store their log record;
 * 2. what the page gathered is stored (an analytics batch) and the page's listeners are removed;
 * 3. the queues stop their timers; a flush under way ends at its next send (which the closed transport refuses,
 *    so the item stays queued);
 * 4. the status watch and the screen's remote-execution handler stop;
 * 5. the local databases close. What stayed queued is sent by the next client of the app on this device.
 * The engine is shared by the page's clients and stays.
 */
export async function closeClient(host: RunsHost): Promise<void> {
  const { runtime, logger } = host.ctx;
  const warn = (error: unknown) => logger.warn(`Client.close(): ${(error as Error)?.message ?? error}`);
  runtime.lockWaits?.abort();
  while (runtime.runs.device.size > 0) await new Promise((resolve) => setTimeout(resolve, 20));
  for (const stop of runtime.stops.splice(0)) await Promise.resolve().then(stop).catch(warn);
  for (const queue of [...runtime.runQueues.values(), ...runtime.analyticsQueues.values()]) {
    await queue.flush().catch(() => undefined);
    queue.dispose();
  }
  runtime.runQueues.clear();
  runtime.analyticsQueues.clear();
  for (const schedule of runtime.logSchedules.values()) clearTimeout(schedule.timer);
  await Promise.all([...runtime.logUploads.values()].map((upload) => upload.catch(() => undefined)));
  const status = runtime.status;
  if (status) {
    status.listeners.clear();
    status.channel?.close();
    const target = globalThis as { removeEventListener?: (type: string, fn: () => void) => void };
    target.removeEventListener?.('online', status.check);
    target.removeEventListener?.('offline', status.check);
    runtime.status = undefined;
  }
  runtime.remoteHandler = undefined;
  const stores = [...runtime.stores.values()];
  runtime.stores.clear();
  for (const store of stores) (await store.catch(() => undefined))?.close();
}
