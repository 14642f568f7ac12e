import type { App, ServerContext } from '../context.js';

/** Routes of app actions, runs, logs, function catalog, screens, debug compile page. */
export function registerActionRoutes(_app: App, _ctx: ServerContext): void {}
