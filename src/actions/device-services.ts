/** HostServices of device runs: the client's own data source and notification clients. */
import type { ClientContext } from '../core/context.js';
import { createDataSourceConnection } from '../data-sources/connection.js';
import { createNotificationsApi } from '../notifications/api.js';
import type { DataSourceConnectionLike, HostServices } from '../contract/pipeline.js';

export function deviceHostServices(ctx: ClientContext): HostServices {
  const notifications = createNotificationsApi(ctx);
  return {
    dataSources: { connect: (idOrName) => createDataSourceConnection(ctx, idOrName) as unknown as DataSourceConnectionLike },
    notifications: { create: (input) => notifications.create(input as unknown as Parameters<typeof notifications.create>[0]) },
  };
}
