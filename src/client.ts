import { createActionsApi, createTasksApi, type ActionsApi, type TasksApi } from './actions/api.js';
import { runsChunk, runsHost } from './actions/runs-host.js';
import type { ClientStatus } from './storage/status.js';
import { createAnalyticsApi, type AnalyticsApi } from './analytics/api.js';
import { resumeQueuedWork } from './analytics/resume.js';
import { getAppInfo, type AppInfo } from './core/app-info.js';
import { resolveConfig, type ClientConfig, type ResolvedConfig } from './core/config.js';
import { closedError, requireAppId, type ClientContext } from './core/context.js';
import { consoleLogger, withOnce } from './core/logger.js';
import { createRuntime } from './core/runtime.js';
import { createDataSourcesApi, type DataSourcesApi } from './data-sources/api.js';
import { createFunctionsApi, type FunctionsApi } from './functions/api.js';
import { createMediaApi, type MediaApi } from './media/api.js';
import { resolveBaseUrl } from './http/regions.js';
import { createTransport, type Transport } from './http/transport.js';
import { createNotificationsApi, type NotificationsApi } from './notifications/api.js';
import { createPageApi, type PageApi } from './page/api.js';
import { createUserApi, type UserApi } from './user/api.js';

export interface Client {
  /** Changes the configuration; later calls use the new values. */
  configure(config: ClientConfig): Client;
  /** The current configuration, defaults filled in. */
  readonly config: Readonly<ResolvedConfig>;
  /** The backend base URL requests go to. */
  readonly baseUrl: string;
  /** The shared HTTP transport, for routes without a typed wrapper. */
  readonly http: Transport;
  readonly App: {
    /** The app this client is configured for, as the backend knows it. */
    info(options?: { signal?: AbortSignal }): Promise<AppInfo>;
    readonly Actions: ActionsApi;
    readonly Tasks: TasksApi;
    readonly Analytics: AnalyticsApi;
  };
  readonly DataSources: DataSourcesApi;
  /** The organization's media library: folders, upload, list, remove. */
  readonly Media: MediaApi;
  /** The owner of the token and its organizations. */
  readonly User: UserApi;
  readonly Notifications: NotificationsApi;
  readonly Functions: FunctionsApi;
  readonly Page: PageApi;
  /** Online or offline, and the work waiting on this device for the backend (docs/analytics.md "Offline status"). */
  status(): Promise<ClientStatus>;
  /** Calls `listener` with the status now, then at every change; returns the function that stops it. */
  onStatusChange(listener: (status: ClientStatus) => void): () => void;
  /**
   * Stops this client (docs/api.md "Closing a client"): from the call on, every method that would reach the backend
   * or open the device's storage fails with `CLIENT_CLOSED`. Device runs in progress finish and keep their log
   * record; gathered analytics events are stored; queued work stays on the device for the next client of the app.
   * Then timers and listeners stop and the local databases close. Resolves when done; later calls return the same.
   */
  close(): Promise<void>;
}

/** Creates a client. Nothing is sent over the network until a method is called. */
export function createClient(config: ClientConfig = {}): Client {
  let current = resolveConfig(config);
  const logger = withOnce(config.logger ?? consoleLogger);
  const baseUrl = () => resolveBaseUrl(current);
  const http = createTransport({
    baseUrl,
    authToken: () => current.authToken,
    // Read at every request, so configure({ fetch, timeout }) applies to later calls.
    resolveFetch: () => {
      if (ctx.runtime.closed) throw closedError();
      return current.fetch;
    },
    timeout: () => current.timeout,
  });
  const ctx: ClientContext = {
    http,
    config: () => current,
    appId: () => requireAppId(current),
    now: () => current.clock(),
    logger,
    runtime: createRuntime(),
  };

  const client: Client = {
    configure(next: ClientConfig) {
      current = resolveConfig({ ...current, ...next, limits: { ...current.limits, ...(next.limits ?? {}) } });
      // An app set (or changed) now: what an earlier visit left queued for it is sent as at start-up; a backend URL
      // set now: what waited for one (NOT_CONFIGURED) is sent.
      if (next.appId !== undefined) resumeQueuedWork(ctx);
      else if (next.baseUrl !== undefined || next.regionUrls !== undefined || next.region !== undefined) resumeQueuedWork(ctx, true);
      return client;
    },
    get config() {
      return current;
    },
    get baseUrl() {
      return baseUrl();
    },
    http,
    App: {
      info: (options) => getAppInfo(ctx, options),
      Actions: createActionsApi(ctx),
      Tasks: createTasksApi(ctx),
      Analytics: createAnalyticsApi(ctx),
    },
    DataSources: createDataSourcesApi(ctx),
    Media: createMediaApi(ctx),
    User: createUserApi(ctx),
    Notifications: createNotificationsApi(ctx),
    Functions: createFunctionsApi(ctx),
    Page: createPageApi(ctx),
    status: async () => (await runsChunk(ctx)).status(runsHost(ctx)),
    close: () => (ctx.runtime.closed ??= runsChunk(ctx).then((m) => m.closeClient(runsHost(ctx)))),
    onStatusChange(listener) {
      let stop: (() => void) | undefined;
      let stopped = false;
      runsChunk(ctx).then(
        (m) => stopped || (stop = m.watchStatus(runsHost(ctx), listener)),
        (error) => logger.warn(`Client.onStatusChange: ${(error as Error)?.message ?? error}`),
      );
      return () => {
        stopped = true;
        stop?.();
      };
    },
  };
  return client;
}
