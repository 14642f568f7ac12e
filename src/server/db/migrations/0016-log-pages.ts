import type { Migration } from '../migrate.js';

/**
 * getLogs at scale (an app's `logs` grow with every run and are never pruned). A page of an app's action records,
 * newest first, sorted every record of the app (`logs_action_records` gave the rows, a temporary b-tree the order):
 * 333 ms per page at 200,000 records, and a `where` read page after page re-sorted them all each time. The partial
 * index holds the action records of an app in page order, so a page reads its rows and stops. The count of the
 * records (every getLogs answer has it) read each row of the table for its `type`: the action index is replaced by
 * one that also carries `id` and `type` (`logs_action_counted`), so it is counted from the index alone (212 → 21 ms
 * at 200,000).
 */
export const logPageMigrations: Migration[] = [
  {
    id: '0016_logs_action_pages',
    // The old index is dropped last: on PostgreSQL a DROP INDEX holds its ACCESS EXCLUSIVE lock on `logs` until the
    // migration commits, so dropped first it would also block reads while the new index is built.
    up: [
      'CREATE INDEX logs_action_page ON logs (app_id, created_at, id) WHERE action_id IS NOT NULL',
      'CREATE INDEX logs_action_counted ON logs (app_id, action_id, created_at, id, type)',
      'DROP INDEX logs_action_records',
    ],
  },
];
