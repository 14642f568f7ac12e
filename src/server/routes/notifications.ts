import type { App, ServerContext } from '../context.js';

/** Routes of notifications, read receipts, push subscriptions. */
export function registerNotificationRoutes(_app: App, _ctx: ServerContext): void {}
