import type { Migration } from '../migrate.js';

/** Tables of data sources, entries, versions, files, logs. Ids: `0002_<name>`, then `0002b_<name>` for later changes. */
export const dataSourceMigrations: Migration[] = [];
