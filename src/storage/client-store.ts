import type { ClientContext } from '../core/context.js';
import { openLocalStore, type LocalStore } from './local-store.js';

/**
 * The local store of a client: one IndexedDB database per app (`in-app-runtime:<appId>`), opened once per
 * client context and app, lazily on first use. Every device-side module (analytics, actions cache,
 * queued runs, run logs) shares it through here.
 */
const opened = new WeakMap<ClientContext, Map<number, Promise<LocalStore>>>();

export function localDbName(appId: number): string {
  return `in-app-runtime:${appId}`;
}

export function clientStore(ctx: ClientContext): Promise<LocalStore> {
  const appId = ctx.appId();
  let perApp = opened.get(ctx);
  if (!perApp) opened.set(ctx, (perApp = new Map()));
  let store = perApp.get(appId);
  if (!store) {
    store = openLocalStore({ name: localDbName(appId), logger: ctx.logger });
    perApp.set(appId, store);
  }
  return store;
}

/** Per-client-context singletons of the device-side modules (queues, caches), keyed by a name. */
const singletons = new WeakMap<ClientContext, Map<string, unknown>>();

export function perClient<T>(ctx: ClientContext, name: string, create: () => T): T {
  let map = singletons.get(ctx);
  if (!map) singletons.set(ctx, (map = new Map()));
  if (!map.has(name)) map.set(name, create());
  return map.get(name) as T;
}

/** The singleton `perClient` made under this name, if any (never creates one). */
export function existingPerClient<T>(ctx: ClientContext, name: string): T | undefined {
  return singletons.get(ctx)?.get(name) as T | undefined;
}
