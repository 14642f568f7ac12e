import type { Action, ActionLog } from '../contract/actions.js';
import type { AnalyticsBatch } from '../analytics/delivery.js';
import type { RunSlots } from '../actions/rate-limit.js';
import type { PrefStore } from '../analytics/prefs.js';
import type { Session } from '../analytics/session.js';
import type { CustomFunctionsCache } from '../functions/custom-cache.js';
import type { RegisteredFunction } from '../functions/registry.js';
import type { RemoteExecutionHandler } from '../page/remote-execution.js';
import type { ActionsCache } from '../storage/actions-cache.js';
import type { LocalStore } from '../storage/local-store.js';
import type { Outbox } from '../storage/outbox.js';
import type { QueuedRequest } from '../storage/run-queue.js';
import type { RunState } from '../storage/run-state.js';
import type { StatusWatch } from '../storage/status.js';

/**
 * Everything one client keeps while the page lives, built by `createClient` and reached through
 * `ClientContext.runtime`: each device-side module has its own typed field here, nothing sits in module-level maps.
 * What belongs to an app is in a Map by app id, since `configure({ appId })` may set or change the app: the queues
 * and caches of an app are made when it is first used, and stay its own (a queue made for app 1 keeps to app 1's
 * database). The fields of the lazy chunks are empty slots that the chunk fills, so this file pulls none of
 * their code into client.js (only types are imported above).
 */
export interface ClientRuntime {
  /** The local store of each app (src/storage/client-store.ts). */
  stores: Map<number, Promise<LocalStore>>;
  /** What this client remembers of its runs, for `getRun` (src/storage/run-state.ts). */
  runs: RunState;
  /** Server runs queued offline, per app (src/storage/run-queue.ts). */
  runQueues: Map<number, Outbox<QueuedRequest>>;
  /** Analytics batches waiting for delivery, per app (src/analytics/delivery.ts). */
  analyticsQueues: Map<number, Outbox<AnalyticsBatch>>;
  /** The cached actions list of each app, then environment (src/storage/actions-cache.ts). */
  actions: Map<number, Map<string, ActionsCache>>;
  /**
   * Copies of the actions this client fetched to run them, by app id, environment and name or id as given
   * (src/actions/run.ts `loadRunnable`); replaced by an empty map when this client changes an action.
   */
  actionCopies: Map<string, ActionCopy>;
  /** The cached custom functions of each app (src/functions/custom-cache.ts). */
  customFunctions: Map<number, CustomFunctionsCache>;
  /** Analytics opt-out and session of each app (src/analytics/api.ts). */
  analytics: Map<number, { prefs: PrefStore; session: Session }>;
  /** The scheduled upload of device run logs, per app (src/actions/logs.ts). */
  logSchedules: Map<number, LogSchedule>;
  /** The last upload of device run logs started, per app: the next one waits for it (src/storage/run-logs.ts). */
  logUploads: Map<number, Promise<unknown>>;
  /** Device run logs waiting to be written, per app, and the write under way (src/storage/run-logs.ts). */
  logWrites: Map<number, LogWrites>;
  /** Apps for which dropping old device run logs was already reported. */
  logsCapped: Set<number>;
  /** Apps whose work queued by an earlier page load was resumed (src/analytics/resume.ts). */
  resumed: Set<number>;
  /** Times of the manual runs of the last minute, per app (src/actions/rate-limit.ts). */
  runSlots: Map<number, RunSlots>;
  /** Functions registered on this device, by package (src/functions/registry.ts). */
  functions: Map<string, RegisteredFunction>;
  /** What this screen registered to answer screen-targeted actions (src/page/remote-execution.ts). */
  remoteHandler?: RemoteExecutionHandler;
  /** The status watch of `Client.onStatusChange`, filled by the lazy `runs` chunk (src/storage/status.ts). */
  status?: StatusWatch;
  /**
   * Set by `Client.close()` (src/core/close.ts): the closing, done when it resolves. From then on nothing new is sent or
   * opened (`CLIENT_CLOSED`).
   */
  closed?: Promise<void>;
  /** What `close()` stops that the runtime's fields do not hold: listeners of the page, a batch being gathered. */
  stops: (() => unknown)[];
  /** Aborted by `Client.close()`: ends the queues' waits for a Web Lock that another tab holds (outbox.ts). */
  lockWaits?: AbortController;
  /** The channel on which this client tells the app's other tabs that its queues changed (client-store.ts). */
  statusSender?: BroadcastChannel;
}

/** An action as fetched for a run: its ETag, when the backend gave or confirmed it (`ctx.now()`), with which token. */
export interface ActionCopy {
  action: Action;
  etag: string | null;
  at: number;
  token: string | undefined;
}

export interface LogWrites {
  /** Records waiting for the next write. */
  logs: ActionLog[];
  /** The next write, not started yet (it takes `logs` when it starts). */
  next?: Promise<void>;
  /** Settles (never rejects) once every write started or waiting is done. */
  done: Promise<void>;
}

export interface LogSchedule {
  timer?: ReturnType<typeof setTimeout>;
  running: boolean;
  again: boolean;
}

export function createRuntime(): ClientRuntime {
  return {
    stores: new Map(),
    runs: { device: new Map(), keys: new Map(), sent: new Map() },
    runQueues: new Map(),
    analyticsQueues: new Map(),
    actions: new Map(),
    actionCopies: new Map(),
    customFunctions: new Map(),
    analytics: new Map(),
    logSchedules: new Map(),
    logUploads: new Map(),
    logWrites: new Map(),
    logsCapped: new Set(),
    resumed: new Set(),
    runSlots: new Map(),
    functions: new Map(),
    stops: [],
  };
}

/** The value of `key` in `map`, made by `create` the first time. */
export function entry<K, V>(map: Map<K, V>, key: K, create: () => NoInfer<V>): V {
  let value = map.get(key);
  if (value === undefined) map.set(key, (value = create()));
  return value;
}
