import type { App, ServerContext } from '../context.js';
import { registerAllDataSourceRoutes } from '../data-sources/routes/index.js';

/** Routes of data sources, entries, queries, commits, versions, files, access rules. */
export function registerDataSourceRoutes(app: App, ctx: ServerContext): void {
  registerAllDataSourceRoutes(app, ctx);
}
