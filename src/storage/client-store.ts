import { closedError, type ClientContext } from '../core/context.js';
import { createMemoryStore, openLocalStore, type LocalStore } from './local-store.js';

/**
 * The local store of a client: one IndexedDB database per app (`in-app-runtime:<appId>`), opened once per
 * client context and app, lazily on first use. Every device-side module (analytics, actions cache,
 * queued runs, run logs) shares it through here.
 *
 * A store is cached only while it is usable: an open that fails is forgotten (the next call tries again), and
 * so is a connection closed from outside (another tab deletes the database, or the browser closes it): the
 * next call opens the database anew. When another tab upgrades the database to a newer layout (a newer
 * version of the library), this older code cannot use it and must not delete it: the app's store falls back
 * to memory for the rest of the page, with one warning. The stores are kept in the client's runtime (`stores`).
 */

export function localDbName(appId: number): string {
  return `in-app-runtime:${appId}`;
}

/**
 * The local store of `appId` (default: the app configured now). Modules that work for one app (a queue made
 * for it) pass its id, so that they keep to that app's database after `configure({ appId })`.
 */
export function clientStore(ctx: ClientContext, appId: number = ctx.appId()): Promise<LocalStore> {
  const apps = ctx.runtime.stores;
  const cached = apps.get(appId);
  if (cached) return cached;
  if (ctx.runtime.closed) return Promise.reject(closedError());
  const name = localDbName(appId);
  const store: Promise<LocalStore> = openLocalStore({
    name,
    logger: ctx.logger,
    onClose(reason) {
      if (apps.get(appId) !== store) return;
      if (reason === 'upgraded') {
        ctx.logger.warn(
          `Local database "${name}" was upgraded by a newer version of the library in another tab; this page keeps its local data in memory from now on (reload to use the database again)`,
        );
        apps.set(appId, Promise.resolve(createMemoryStore()));
      } else {
        ctx.logger.info(`Local database "${name}" was ${reason === 'deleted' ? 'deleted by another tab' : 'closed by the browser'}; opening it again`);
        apps.delete(appId);
      }
    },
  });
  apps.set(appId, store);
  store.catch(() => {
    if (apps.get(appId) === store) apps.delete(appId);
  });
  return store;
}

/** The BroadcastChannel on which a tab tells the app's other tabs that the shared queues changed. */
export const STATUS_CHANNEL = 'in-app-runtime:status';

/**
 * Tells the status watchers of a client (`Client.onStatusChange`, src/storage/status.ts) that queued work changed,
 * and those of the other tabs of this origin: the queues live in the app's IndexedDB database, which they share.
 */
export function statusChanged(ctx: ClientContext): void {
  const { runtime } = ctx;
  runtime.status?.check();
  if (typeof BroadcastChannel !== 'function') return;
  // What close() stores (a finishing run's log, the gathered events) is told on a channel of its own, closed at once.
  if (runtime.closed) {
    const once = new BroadcastChannel(STATUS_CHANNEL);
    once.postMessage(0);
    once.close();
    return;
  }
  // Otherwise one channel per client, kept open: opening one costs 0.3–5 ms in Node (a run saves a log record each
  // time). It does not keep Node alive (unref), and Client.close() closes it.
  if (!runtime.statusSender) {
    const channel = new BroadcastChannel(STATUS_CHANNEL);
    (channel as { unref?: () => void }).unref?.();
    runtime.stops.push(() => channel.close());
    runtime.statusSender = channel;
  }
  runtime.statusSender.postMessage(0);
}
