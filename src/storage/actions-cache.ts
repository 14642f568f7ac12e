import { unusableAction } from '../contract/action-limits.js';
import type { Action } from '../contract/actions.js';
import type { ClientContext } from '../core/context.js';
import { entry } from '../core/runtime.js';
import { clientStore } from './client-store.js';
import { isOnline, onOnline } from './connectivity.js';

/**
 * The app's actions kept on the device (store `actions`, one record per environment), so that analytics
 * triggers and client actions work offline. The first `get()` of a page load (of a cache instance) asks the
 * backend whether the stored list is still current (`If-None-Match` with its ETag → 304), waiting at most
 * `limits.actionsRevalidateMs`; offline, on failure or past that bound it answers the stored list (a late
 * answer is applied when it comes). Later `get()`s answer from memory and refresh in the background when online
 * (at most every `maxAgeMs`); `refresh()` fetches now. Listeners hear every new list.
 */
export interface CachedActions {
  /** The definitions (`view=definitions`: no run state, `lastRunAt` / `nextRunAt` are absent). */
  actions: Action[];
  /** ISO time of the backend answer these came from (or confirmed them). */
  fetchedAt: string;
  /** The backend's ETag of this list, sent back as `If-None-Match`. */
  etag?: string;
}

export interface ActionsCache {
  /** The cached actions (empty when none were ever fetched); starts a background refresh when stale. */
  get(): Promise<Action[]>;
  /** Fetches the list from the backend now, stores it and tells listeners. Rejects when the fetch fails. */
  refresh(): Promise<Action[]>;
  /** Forgets the freshness so the next `get()` refreshes (call after creating, changing or removing actions). */
  invalidate(): void;
  /** Starts a background refresh when the list is loaded and stale and the device is online (synchronous, cheap). */
  refreshIfStale(): void;
  /** Whether anyone listens (the analytics dispatcher), so a changed list should be fetched right away. */
  inUse(): boolean;
  /** Called with the list already loaded (at once) and with every list loaded or fetched later. Returns a function that stops it. */
  subscribe(listener: (actions: Action[]) => void): () => void;
}

/**
 * Fetches the actions list of one app and environment (those the cache was made for, whatever is configured
 * now), with its ETag. Given the `etag` of the cached list, answers without `actions` when that list is current.
 */
export type ActionsFetcher = (
  ctx: ClientContext,
  target: { appId: number; environment: string; etag?: string },
) => Promise<{ actions?: Action[]; etag?: string }>;

/** `GET v1/apps/:appId/tasks?environment=&view=definitions` with `If-None-Match`: the actions of that app and environment. */
export const fetchActionsFromBackend: ActionsFetcher = async (ctx, { appId, environment, etag }) => {
  const { status, headers, body } = await ctx.http.send<unknown>('GET', `v1/apps/${appId}/tasks`, {
    query: { environment, view: 'definitions' },
    headers: etag ? { 'If-None-Match': etag } : {},
  });
  if (status === 304) return { etag };
  const list = Array.isArray(body) ? body : ((body as { actions?: unknown; tasks?: unknown }).actions ?? (body as { tasks?: unknown }).tasks);
  if (!Array.isArray(list)) throw new TypeError('The backend answered the actions list with an unexpected shape');
  return { actions: list, etag: headers.get('ETag') ?? undefined };
};

export const ACTIONS_MAX_AGE_MS = 5 * 60_000;

/** The cache of the app and environment configured now, kept in the client's runtime (`actions`). */
export function actionsCache(ctx: ClientContext, options: { maxAgeMs?: number; fetch?: ActionsFetcher } = {}): ActionsCache {
  const environment = ctx.config().environment;
  const appId = ctx.appId();
  const perApp = entry(ctx.runtime.actions, appId, () => new Map());
  return entry(perApp, environment, () => createActionsCache(ctx, appId, environment, options));
}

/**
 * This client created, changed, published or removed an action: its cached list and the copies its runs use are
 * stale now (the copies are dropped at once). When the list is
 * in use (analytics triggers listen) and the device is online, the new list is fetched before this resolves, so
 * the screen's next event already matches the changed triggers; otherwise the next `get()` fetches it. Never
 * rejects (a failed fetch is logged; the list stays stale and is fetched again later). Other devices and tabs
 * pick the change up at their next refresh (`ACTIONS_MAX_AGE_MS`).
 */
export async function actionsChanged(ctx: ClientContext): Promise<void> {
  // The copies runs use (src/actions/run.ts): a new map, so a fetch under way stores its answer in the old one.
  ctx.runtime.actionCopies = new Map();
  const cache = ctx.runtime.actions.get(ctx.appId())?.get(ctx.config().environment);
  if (!cache) return;
  cache.invalidate();
  if (!cache.inUse() || !isOnline()) return;
  try {
    await cache.refresh();
  } catch (error) {
    ctx.logger.warn(`Could not refresh the cached actions: ${(error as Error)?.message ?? error}`);
  }
}

function createActionsCache(ctx: ClientContext, appId: number, environment: string, options: { maxAgeMs?: number; fetch?: ActionsFetcher }): ActionsCache {
  const maxAge = options.maxAgeMs ?? ACTIONS_MAX_AGE_MS;
  const listeners = new Set<(actions: Action[]) => void>();
  let current: Action[] | undefined;
  /** The list last read from the local store or fetched, with its ETag: what a 304 confirms. */
  let known: CachedActions | undefined;
  let fetchedAtMs = -Infinity;
  /** Set by invalidate() until a fetch started after it succeeds, so a list read from the local store meanwhile counts as stale. */
  let invalidated = false;
  /** Counts invalidations: a fetch that was under way when one happened may hold the old list and stays stale. */
  let generation = 0;
  let loading: Promise<Action[]> | undefined;
  let refreshing: Promise<Action[]> | undefined;
  let refreshingGeneration = 0;

  const warn = (error: unknown) => ctx.logger.warn(`Could not refresh the cached actions: ${(error as Error)?.message ?? error}`);
  /** The actions this device can use: one malformed or oversized action (stored before the limits) is left out, not the list. */
  const usable = (list: Action[]) =>
    list.filter((action) => {
      const why = unusableAction(action);
      if (why) warn(`action ${(action as Action)?.id} ignored on this device: ${why}`);
      return !why;
    });
  const tell = (actions: Action[]) => {
    for (const l of listeners) {
      try {
        l(actions);
      } catch (error) {
        ctx.logger.warn(`actions cache listener failed: ${(error as Error)?.message ?? error}`);
      }
    }
  };

  async function load(): Promise<Action[]> {
    const store = await clientStore(ctx, appId);
    const cached = await store.get<CachedActions>('actions', environment);
    if (current) return current; // a refresh won the race
    if (cached && Array.isArray(cached.actions)) {
      known = cached;
      // A page load: the backend confirms (304) or replaces the stored list before the first event is matched,
      // within the bound; offline, on failure or past it, the stored list answers and a late answer is applied.
      if (isOnline()) {
        await Promise.race([cache.refresh().catch(warn), new Promise((resolve) => setTimeout(resolve, ctx.config().limits.actionsRevalidateMs))]);
        if (current) return current;
      }
      current = usable(cached.actions);
      fetchedAtMs = invalidated ? -Infinity : Date.parse(cached.fetchedAt) || -Infinity;
      tell(current);
      return current;
    }
    // Never fetched on this device: wait for the backend's list rather than answer "no actions".
    if (isOnline()) {
      try {
        return await cache.refresh();
      } catch (error) {
        ctx.logger.warn(`Could not load the actions: ${(error as Error)?.message ?? error}`);
      }
    }
    if (current) return current;
    current = [];
    tell(current);
    return current;
  }

  const cache: ActionsCache = {
    async get() {
      const actions = current ?? (await (loading ??= load()));
      cache.refreshIfStale();
      return actions;
    },
    refresh() {
      // A fetch under way from before the last invalidation may hold the old list: wait for it, then fetch again.
      if (refreshing && refreshingGeneration !== generation) return refreshing.catch(() => undefined).then(() => cache.refresh());
      refreshingGeneration = generation;
      refreshing ??= (async () => {
        try {
          const startedAt = generation;
          const fetched = await (options.fetch ?? fetchActionsFromBackend)(ctx, { appId, environment, etag: known?.etag });
          const actions = fetched.actions ? usable(fetched.actions) : known!.actions;
          const etag = fetched.etag;
          const fetchedAt = new Date(ctx.now()).toISOString();
          const changed = actions !== current;
          current = actions;
          if (startedAt === generation) {
            fetchedAtMs = ctx.now();
            invalidated = false;
          }
          known = { actions, fetchedAt, etag };
          try {
            const store = await clientStore(ctx, appId);
            await store.put<CachedActions>('actions', environment, known);
          } catch (error) {
            // Not stored (the device keeps it in memory for this page): the next load fetches it again.
            ctx.logger.warn(`Actions not stored: ${(error as Error)?.message ?? error}`);
          }
          if (changed) tell(actions); // a 304 for the list already told says nothing new
          // Changed while this fetch was under way: fetch again once this one is done.
          if (startedAt !== generation) queueMicrotask(() => cache.refreshIfStale());
          return actions;
        } finally {
          refreshing = undefined;
        }
      })();
      return refreshing;
    },
    invalidate() {
      fetchedAtMs = -Infinity;
      invalidated = true;
      generation++;
    },
    refreshIfStale() {
      if (current && !refreshing && ctx.now() - fetchedAtMs >= maxAge && isOnline()) cache.refresh().catch(warn);
    },
    inUse: () => listeners.size > 0,
    subscribe(listener) {
      listeners.add(listener);
      // A list already loaded (e.g. by an offline run()) is told at once: it may not be fetched again for minutes.
      if (current) {
        try {
          listener(current);
        } catch (error) {
          ctx.logger.warn(`actions cache listener failed: ${(error as Error)?.message ?? error}`);
        }
      }
      return () => listeners.delete(listener);
    },
  };
  // Back online: fetch the newest list for whoever listens (the analytics dispatcher). Client.close() stops it.
  if (!ctx.runtime.closed)
    ctx.runtime.stops.push(
      onOnline(() => {
        cache.invalidate();
        if (listeners.size > 0) void cache.get();
      }),
    );
  return cache;
}

/**
 * The cached action with this id or name (as given to `run()`), for runs made while the backend cannot be
 * reached. Undefined when the device has never seen it.
 */
export async function findCachedAction(ctx: ClientContext, idOrName: number | string): Promise<Action | undefined> {
  return pick(await actionsCache(ctx).get(), idOrName);
}

/**
 * The action as this device last stored it, read from memory or the local store only (never the network,
 * never waiting for a revalidation): a hint, e.g. to start the engine while the action is fetched.
 */
export async function peekCachedAction(ctx: ClientContext, idOrName: number | string): Promise<Action | undefined> {
  return pick(await peekCachedActions(ctx), idOrName);
}

/** The list this device last stored, from the local store only (same hint as peekCachedAction). */
export async function peekCachedActions(ctx: ClientContext): Promise<Action[]> {
  const store = await clientStore(ctx, ctx.appId());
  return (await store.get<CachedActions>('actions', ctx.config().environment))?.actions ?? [];
}

function pick(actions: Action[], idOrName: number | string): Action | undefined {
  const key = typeof idOrName === 'string' ? idOrName.trim() : idOrName;
  if (typeof key === 'number' || /^\d+$/.test(key)) {
    const byId = actions.find((a) => a.id === Number(key));
    if (byId) return byId;
  }
  return actions.find((a) => a.name === key);
}
