import type { Migration } from '../migrate.js';

/**
 * Analytics events are stored as `logs` records (`app.analytics.pageView` / `app.analytics.event`, table of
 * migration 0002). This table remembers the batches received, so that a batch the device re-sends after a
 * lost answer is stored once.
 */
export const analyticsMigrations: Migration[] = [
  {
    id: '0006_analytics',
    up: [
      `CREATE TABLE analytics_batches (
        app_id INTEGER NOT NULL,
        batch_id TEXT NOT NULL,
        event_count INTEGER NOT NULL,
        created_at TEXT NOT NULL,
        PRIMARY KEY (app_id, batch_id)
      )`,
    ],
  },
];
