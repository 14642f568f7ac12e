import type { App, ServerContext } from '../../context.js';
import type { DataSourceService } from '../service.js';
import { registerAdminRoutes } from './admin.js';
import { registerDataSourceCrudRoutes } from './data-sources.js';
import { registerEntryRoutes } from './entries.js';
import { registerFileRoutes } from './files.js';
import { registerVersionRoutes } from './versions.js';

/** Every data source route, backed by the one data source service of the server. */
export function registerAllDataSourceRoutes(app: App, ctx: ServerContext, service: DataSourceService): void {
  registerAdminRoutes(app, ctx, service);
  registerDataSourceCrudRoutes(app, ctx, service);
  registerEntryRoutes(app, ctx, service);
  registerVersionRoutes(app, ctx, service);
  registerFileRoutes(app, ctx, service);
}
