import type { Migration } from '../migrate.js';

/**
 * The fair claim of server runs (issue 15, actions/run-store.ts): each app's head of queue and running count
 * come from `(status, app_id, id)`; the per-app rate window counts every trigger by `(app_id, queued_at)`.
 */
export const runQueueMigrations: Migration[] = [
  {
    id: '0011_action_runs_fair_claim',
    up: [
      `CREATE INDEX action_runs_status_app ON action_runs (status, app_id, id)`,
      `CREATE INDEX action_runs_app_queued ON action_runs (app_id, queued_at)`,
      `CREATE INDEX action_runs_app_claimed ON action_runs (app_id, claimed_at)`,
    ],
  },
];
