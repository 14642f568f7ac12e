import type { App, ServerContext } from '../context.js';

/** Routes of data sources, entries, queries, commits, versions, files, access rules. */
export function registerDataSourceRoutes(_app: App, _ctx: ServerContext): void {}
