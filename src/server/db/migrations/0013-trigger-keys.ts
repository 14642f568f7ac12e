import type { Migration } from '../migrate.js';

/**
 * A skip record of a triggered run carries the key the run would have had (`log:<type>:<log id>:<action id>`), so
 * an event delivered twice (PostgreSQL redelivers one whose instance died before recording its delivery) records
 * one skip, as it queues one run (issue 15).
 */
export const triggerKeyMigrations: Migration[] = [
  {
    id: '0013_logs_trigger_key',
    up: [`ALTER TABLE logs ADD COLUMN trigger_key TEXT`, `CREATE UNIQUE INDEX logs_trigger_key ON logs (app_id, trigger_key)`],
  },
];
