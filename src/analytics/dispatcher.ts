import type { Action } from '../contract/actions.js';
import type { Logger } from '../core/logger.js';
import type { AnalyticsEvent } from './types.js';
import { loadChunk, loadedChunk } from '../core/lazy.js';
import type { Tester } from '../filter/tester.js';

/** Runs one action on the device with the analytics context; the actions module supplies it. */
export type AnalyticsRunner = (action: Action, context: { trigger: 'analytics'; event: AnalyticsEvent }) => Promise<void>;

export interface DispatcherOptions {
  run: AnalyticsRunner;
  logger: Logger;
  /** `live` runs published actions only (design §5); `viewer` runs working copies. */
  environment: 'live' | 'viewer';
  /** Most runs waiting at once; beyond it new matches are dropped with a warning (default 500). */
  maxQueued?: number;
  /** Runs at the same time (default 1: runs start in the order of the events). */
  concurrency?: number;
  /** Folder of the lazy `query` chunk (sift), loaded when a trigger has a `where` (default: next to client.js). */
  assetsUrl?: () => string | undefined;
}

export interface Dispatcher {
  /** Replaces the registered actions: keeps those with an analytics trigger that may run on the device. */
  setActions(actions: readonly Action[]): void;
  /** Whether `setActions` was called; before that, events wait and are matched when it is. */
  readonly ready: boolean;
  /** Matches `event` synchronously and queues a run of every matching action. Returns how many matched. */
  dispatch(event: AnalyticsEvent): number;
  /** The actions that would run for `event` (no run). */
  match(event: AnalyticsEvent): Action[];
  /** Resolves when every queued run has ended. */
  idle(): Promise<void>;
  /** Number of registered trigger actions. */
  readonly size: number;
}

interface Registered {
  action: Action;
  testers: Tester[];
}

/**
 * The event type a trigger's `where` fixes by plain equality (`{ type: 'analytics.event', … }`), if any: the
 * `type` key of its flattened form (src/core/partial-where.ts), without sift. A malformed `where` is ignored anyway.
 */
function fixedType(where: Record<string, unknown> | undefined): unknown {
  return typeof where === 'object' && where !== null && !Array.isArray(where) ? where.type : undefined;
}

/** Whether `action` may run on this device for an analytics event. */
export function isDeviceAnalyticsAction(action: Action, environment: 'live' | 'viewer'): boolean {
  if (!action || action.active === false) return false;
  if (action.environment !== 'client' && action.environment !== 'any') return false;
  if (environment === 'live' && action.published === false) return false;
  return Array.isArray(action.triggers) && action.triggers.some((t) => t?.trigger === 'analytics');
}

/**
 * Analytics trigger dispatch (design §7). Triggers are compiled once per actions list; an event is matched
 * synchronously against the triggers indexed under its type (plus those that do not fix a type), and the
 * runs of the matching actions are queued, never awaited by `dispatch`. A failing run is logged and never
 * stops tracking or the other runs.
 */
export function createDispatcher(options: DispatcherOptions): Dispatcher {
  const maxQueued = options.maxQueued ?? 500;
  const concurrency = Math.max(1, options.concurrency ?? 1);
  let byType = new Map<string, Registered[]>();
  let anyType: Registered[] = [];
  let count = 0;
  let ready = false;
  const waiting: AnalyticsEvent[] = [];
  let warnedWaiting = false;
  const queue: { action: Action; event: AnalyticsEvent }[] = [];
  let active = 0;
  let idleWaiters: (() => void)[] = [];

  function compile(actions: readonly Action[]) {
    const nextByType = new Map<string, Registered[]>();
    const nextAny: Registered[] = [];
    let n = 0;
    for (const action of actions) {
      if (!isDeviceAnalyticsAction(action, options.environment)) continue;
      const triggers = action.triggers.filter((t) => t.trigger === 'analytics');
      // Index under the event type when every analytics trigger of the action fixes the same one.
      const types = new Set(triggers.map((t) => fixedType(t.where)));
      const testers: Tester[] = [];
      triggers.forEach((t) => {
        const index = action.triggers.indexOf(t);
        try {
          const query = loadedChunk('query');
          if (t.where === undefined || t.where === null) testers.push(() => true);
          else if (!query) throw new Error('its where cannot be matched: the query chunk did not load');
          else testers.push(query.compilePartialFilter(t.where, `triggers[${index}].where`));
        } catch (error) {
          options.logger.warn(`Action "${action.name}" (${action.id}): analytics trigger ignored: ${(error as Error).message}`);
        }
      });
      if (testers.length === 0) continue;
      const entry = { action, testers };
      const [type] = types;
      if (types.size === 1 && typeof type === 'string') {
        const list = nextByType.get(type) ?? [];
        list.push(entry);
        nextByType.set(type, list);
      } else nextAny.push(entry);
      n++;
    }
    byType = nextByType;
    anyType = nextAny;
    count = n;
  }

  function candidates(event: AnalyticsEvent): Action[] {
    const matched: Action[] = [];
    const test = (list: Registered[] | undefined) => {
      if (!list) return;
      for (const { action, testers } of list) {
        for (const tester of testers) {
          let ok = false;
          try {
            ok = tester(event);
          } catch {
            ok = false; // a query that cannot evaluate on this event does not match it
          }
          if (ok) {
            matched.push(action);
            break;
          }
        }
      }
    };
    test(byType.get(event.type));
    test(anyType);
    return matched;
  }

  function pump() {
    while (active < concurrency && queue.length > 0) {
      const { action, event } = queue.shift()!;
      active++;
      let started: Promise<void>;
      try {
        started = Promise.resolve(options.run(action, { trigger: 'analytics', event }));
      } catch (error) {
        started = Promise.reject(error);
      }
      started
        .catch((error) => options.logger.warn(`Analytics-triggered action "${action.name}" (${action.id}) failed: ${(error as Error)?.message ?? error}`))
        .finally(() => {
          active--;
          pump();
        });
    }
    if (active === 0 && queue.length === 0) {
      const waiters = idleWaiters;
      idleWaiters = [];
      for (const w of waiters) w();
    }
  }

  /** Whether `actions` has a device analytics trigger with a `where`: its matching needs sift, the lazy query chunk. */
  const needsQuery = (actions: readonly Action[]) =>
    actions.some((a) => isDeviceAnalyticsAction(a, options.environment) && a.triggers.some((t) => t?.trigger === 'analytics' && t.where != null));
  let generation = 0;

  function apply(actions: readonly Action[]) {
    compile(actions);
    ready = true;
    const held = waiting.splice(0);
    for (const event of held) dispatcher.dispatch(event);
    queueMicrotask(pump);
  }

  const dispatcher: Dispatcher = {
    setActions(actions) {
      const current = ++generation;
      if (loadedChunk('query') || !needsQuery(actions)) return apply(actions);
      // Until sift is here the previous list stays in force (before the first, events wait as before any list).
      // If it cannot load, the triggers with a `where` are ignored with a warning (compile).
      loadChunk('query', options.assetsUrl?.())
        .catch((error: unknown) => options.logger.warn(`Analytics trigger matching could not load: ${(error as Error)?.message ?? error}`))
        .then(() => current === generation && apply(actions));
    },
    get ready() {
      return ready;
    },
    get size() {
      return count;
    },
    match: candidates,
    dispatch(event) {
      if (!ready) {
        if (waiting.length < maxQueued) waiting.push(event);
        else if (!warnedWaiting) {
          warnedWaiting = true; // once: every later event would say the same
          options.logger.warn(`Too many analytics events waiting for the actions list (${maxQueued}); later events run no trigger until it is loaded`);
        }
        return 0;
      }
      if (count === 0) return 0;
      const matched = candidates(event);
      for (const action of matched) {
        if (queue.length >= maxQueued) {
          options.logger.warn(`Too many analytics-triggered runs waiting (${maxQueued}); "${action.name}" is not run for this ${event.type}`);
          continue;
        }
        queue.push({ action, event });
      }
      if (matched.length > 0) queueMicrotask(pump);
      return matched.length;
    },
    idle() {
      if (active === 0 && queue.length === 0 && (ready || waiting.length === 0)) return Promise.resolve();
      return new Promise((resolve) => idleWaiters.push(resolve));
    },
  };
  return dispatcher;
}
