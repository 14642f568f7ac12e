import type { Migration } from '../migrate.js';
import { coreMigrations } from './0001-core.js';
import { dataSourceMigrations } from './0002-data-sources.js';
import { notificationMigrations } from './0003-notifications.js';
import { actionMigrations } from './0004-actions.js';
import { functionMigrations } from './0005-functions.js';
import { analyticsMigrations } from './0006-analytics.js';
import { clientTokenMigrations } from './0007-client-tokens.js';
import { commitReceiptMigrations } from './0008-commit-receipts.js';
import { mediaMigrations } from './0009-media.js';
import { versionChangeMigrations } from './0010-version-changes.js';
import { runQueueMigrations } from './0011-run-queue.js';
import { dataSourceIndexMigrations } from './0012-data-source-indexes.js';
import { triggerKeyMigrations } from './0013-trigger-keys.js';
import { entriesCreatedOrderMigrations } from './0014-entries-created-order.js';
import { filterDateMigrations } from './0015-filter-dates.js';
import { logPageMigrations } from './0016-log-pages.js';
import { tenantScanMigrations } from './0017-tenant-scans.js';

/** Every migration, in the order they are applied. */
export const migrations: readonly Migration[] = [
  ...coreMigrations,
  ...dataSourceMigrations,
  ...notificationMigrations,
  ...actionMigrations,
  ...functionMigrations,
  ...analyticsMigrations,
  ...clientTokenMigrations,
  ...commitReceiptMigrations,
  ...mediaMigrations,
  ...versionChangeMigrations,
  ...runQueueMigrations,
  ...dataSourceIndexMigrations,
  ...triggerKeyMigrations,
  ...entriesCreatedOrderMigrations,
  ...filterDateMigrations,
  ...logPageMigrations,
  ...tenantScanMigrations,
];
