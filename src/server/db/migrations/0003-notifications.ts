import type { Migration } from '../migrate.js';

/** Tables of notifications, receipts, subscriptions, push outbox. Ids: `0003_<name>`, then `0003b_<name>` for later changes. */
export const notificationMigrations: Migration[] = [];
