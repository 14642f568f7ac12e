import type { Migration } from '../migrate.js';

/**
 * Issue 14: a page ordered by `createdAt` (either way) walks this index and stops after its rows instead of
 * sorting every match (data-sources/sql/walk.ts decides when that beats seeking a `where` index). The columns
 * follow the order `createdAt DESC, order ASC, id DESC` (the default tie-breakers) so a newest-first page
 * needs no sort at all; ascending, only entries with equal `createdAt` are sorted. PostgreSQL orders
 * `created_at` under COLLATE "C" (sql/postgres.ts), so its index does too.
 */
export const entriesCreatedOrderMigrations: Migration[] = [
  {
    id: '0014_data_source_entries_created',
    up: ['CREATE INDEX data_source_entries_created ON data_source_entries (data_source_id, created_at, sort_order DESC, id)'],
    postgres: ['CREATE INDEX data_source_entries_created ON data_source_entries (data_source_id, created_at COLLATE "C", sort_order DESC, id)'],
  },
];
