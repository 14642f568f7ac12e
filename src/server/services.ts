import type { ServerContext } from './context.js';
import { createActionsRuntime, type ActionsRuntime } from './actions/runtime.js';
import { pruneCommitReceiptsRegularly } from './data-sources/commit.js';
import { createDataSourceService, type DataSourceService } from './data-sources/service.js';
import { createMediaService, type MediaService } from './media/service.js';
import { buildNotificationService } from './notifications/index.js';
import type { NotificationService } from './notifications/service.js';
import { pruneAnalyticsBatchesRegularly } from './routes/analytics.js';

/**
 * The services of one backend, built once by startServer and passed to the routes and to server runs. Building
 * them starts nothing (no timer, no thread, no listener, no database write): `start()` starts the run worker,
 * the scheduler, the log-trigger listener, the notification loop and the hourly prunes, each of which stops with
 * the server's close.
 */
export interface ServerServices {
  dataSources: DataSourceService;
  notifications: NotificationService;
  media: MediaService;
  actions: ActionsRuntime;
  /** Starts the background parts (once). */
  start(): void;
}

export function createServices(ctx: ServerContext): ServerServices {
  const dataSources = createDataSourceService(ctx);
  const notifications = buildNotificationService(ctx);
  // The data source service's file storage: one folder root and one encryption key scheme for every upload.
  const media = createMediaService(ctx, () => dataSources.core.files);
  const actions = createActionsRuntime(ctx, { dataSources, notifications: notifications.service });
  let started = false;
  return {
    dataSources,
    notifications: notifications.service,
    media,
    actions,
    start() {
      if (started) return;
      started = true;
      // Close hooks run in reverse: the actions runtime stops first (runs in flight may still write, fire web
      // hooks and create notifications), then notifications, then web hooks in flight are aborted, and last the
      // automatic indexes (queries of those runs may have noted scans): a pending count is dropped, a build under
      // way awaited, before the database closes.
      ctx.onClose(() => dataSources.core.autoIndexes.close());
      ctx.onClose(() => dataSources.core.webhooks.stop());
      pruneCommitReceiptsRegularly(ctx);
      notifications.start();
      actions.start();
      pruneAnalyticsBatchesRegularly(ctx);
    },
  };
}
