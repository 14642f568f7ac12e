import type { Migration } from '../migrate.js';

/** Tables of app actions, runs, schedules, screens. Ids: `0004_<name>`, then `0004b_<name>` for later changes. */
export const actionMigrations: Migration[] = [
  {
    id: '0004_actions',
    up: [
      // Versioned fields live in `working` (JSON) and, once published, in `published` (JSON snapshot).
      `CREATE TABLE actions (
        id INTEGER PRIMARY KEY,
        app_id INTEGER NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
        organization_id INTEGER NOT NULL,
        name TEXT NOT NULL,
        active INTEGER NOT NULL DEFAULT 1,
        working TEXT NOT NULL,
        published TEXT,
        published_at TEXT,
        last_run_at TEXT,
        next_run_at TEXT,
        last_scheduled_at TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        UNIQUE (app_id, name)
      )`,
      `CREATE INDEX actions_next_run ON actions (next_run_at)`,
      `CREATE TABLE action_runs (
        id INTEGER PRIMARY KEY,
        app_id INTEGER NOT NULL,
        organization_id INTEGER NOT NULL,
        action_id INTEGER NOT NULL,
        mode TEXT NOT NULL,
        trigger_kind TEXT NOT NULL,
        environment TEXT NOT NULL,
        definition TEXT NOT NULL,
        payload TEXT NOT NULL DEFAULT '{}',
        context TEXT NOT NULL DEFAULT '{}',
        status TEXT NOT NULL DEFAULT 'queued',
        idempotency_key TEXT,
        scheduled_for TEXT,
        queued_at TEXT NOT NULL,
        claimed_by TEXT,
        claimed_at TEXT,
        lease_until TEXT,
        attempts INTEGER NOT NULL DEFAULT 0,
        finished_at TEXT,
        outcome TEXT,
        log_id INTEGER
      )`,
      `CREATE INDEX action_runs_status ON action_runs (status, id)`,
      `CREATE INDEX action_runs_app_time ON action_runs (app_id, trigger_kind, queued_at)`,
      `CREATE INDEX action_runs_action ON action_runs (action_id, status)`,
      `CREATE UNIQUE INDEX action_runs_idempotency ON action_runs (app_id, idempotency_key)`,
      // The generic log table (also written by data sources, migration 0002); created here when absent.
      `CREATE TABLE IF NOT EXISTS logs (
        id INTEGER PRIMARY KEY,
        type TEXT NOT NULL,
        app_id INTEGER,
        organization_id INTEGER,
        data_source_id INTEGER,
        data_source_entry_id INTEGER,
        data TEXT NOT NULL DEFAULT '{}',
        created_at TEXT NOT NULL
      )`,
      `ALTER TABLE logs ADD COLUMN action_id INTEGER`,
      `ALTER TABLE logs ADD COLUMN device_key TEXT`,
      `CREATE INDEX logs_action_records ON logs (app_id, action_id, created_at)`,
      `CREATE UNIQUE INDEX logs_device_key ON logs (app_id, device_key)`,
      `CREATE TABLE pages (
        id INTEGER PRIMARY KEY,
        app_id INTEGER NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        script TEXT NOT NULL DEFAULT '',
        published_script TEXT,
        published_at TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      )`,
    ],
  },
];
