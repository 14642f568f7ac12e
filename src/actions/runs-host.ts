/**
 * What the lazy `runs` chunk (src/core/runs-entry.ts: getRun, getLogs, Client.status) uses of client.js: this
 * client's queues, pending device logs, run memory and error class. The chunk bundles none of the client's state.
 */
import type { ClientContext } from '../core/context.js';
import { loadChunk } from '../core/lazy.js';
import { ClientError } from '../http/errors.js';
import { clientStore, STATUS_CHANNEL } from '../storage/client-store.js';
import { isOnline } from '../storage/connectivity.js';
import type { LocalStore } from '../storage/local-store.js';
import { pendingRunLogs, runLogsWritten, type StoredRunLog } from '../storage/run-logs.js';
import { queuedRequests, type QueuedRequest } from '../storage/run-queue.js';
import type { RunState } from '../storage/run-state.js';
import { uploadDeviceLogs } from './logs.js';

export interface RunsHost {
  ctx: ClientContext;
  ClientError: typeof ClientError;
  /** Server runs queued on this device (offline), oldest first. */
  queuedRuns(): Promise<QueuedRequest[]>;
  /** Number of items in one of the app's local queues (0 without an app). */
  count(store: 'runQueue' | 'analyticsQueue' | 'runLogs'): Promise<number>;
  /** Device run logs not uploaded yet, oldest first. */
  pendingRunLogs(): Promise<StoredRunLog[]>;
  /** Uploads the pending device run logs now (getLogs reads them from the backend next). */
  uploadDeviceLogs(): Promise<unknown>;
  /** The query chunk's filter compiler (getLogs `where` over device records). */
  compileFilter(where: Record<string, unknown>, what: string): Promise<(value: unknown) => boolean>;
  runs: RunState;
  isOnline(): boolean;
  /** The BroadcastChannel name on which other tabs say that the app's queues changed. */
  statusChannel: string;
  /** The local store of the app configured now (src/storage/client-store.ts). */
  store(): Promise<LocalStore>;
}

export function runsHost(ctx: ClientContext): RunsHost {
  return {
    ctx,
    ClientError,
    queuedRuns: () => queuedRequests(ctx),
    count: async (store) => {
      if (ctx.config().appId === undefined) return 0;
      if (store === 'runLogs') await runLogsWritten(ctx);
      // Counted by the store, not read: a queue holds up to 1,000 items.
      return (await clientStore(ctx)).count(store);
    },
    pendingRunLogs: () => pendingRunLogs(ctx),
    uploadDeviceLogs: () => uploadDeviceLogs(ctx),
    compileFilter: async (where, what) => (await loadChunk('query', ctx.config().assetsUrl)).compileFilter(where, what) as (value: unknown) => boolean,
    runs: ctx.runtime.runs,
    isOnline,
    statusChannel: STATUS_CHANNEL,
    store: () => clientStore(ctx),
  };
}

/** The `runs` chunk, loaded on first use. */
export const runsChunk = (ctx: ClientContext) => loadChunk('runs', ctx.config().assetsUrl);
