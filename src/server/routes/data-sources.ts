import type { App, ServerContext } from '../context.js';
import { registerAllDataSourceRoutes } from '../data-sources/routes/index.js';
import type { DataSourceService } from '../data-sources/service.js';

/** Routes of data sources, entries, queries, commits, versions, files, access rules. */
export function registerDataSourceRoutes(app: App, ctx: ServerContext, service: DataSourceService): void {
  registerAllDataSourceRoutes(app, ctx, service);
}
