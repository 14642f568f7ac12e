import type { Migration } from '../migrate.js';

/** Tables of notifications, receipts, subscriptions, push outbox. Ids: `0003_<name>`, then `0003b_<name>` for later changes. */
export const notificationMigrations: Migration[] = [
  {
    id: '0003_notifications',
    up: [
      `CREATE TABLE notifications (
        id INTEGER PRIMARY KEY,
        app_id INTEGER NOT NULL REFERENCES apps(id),
        data TEXT NOT NULL,
        scope TEXT,
        status TEXT NOT NULL CHECK (status IN ('draft', 'published', 'scheduled')),
        order_at TEXT NOT NULL,
        push_notification TEXT,
        published_at TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        deleted_at TEXT
      )`,
      'CREATE INDEX notifications_app_order ON notifications (app_id, order_at)',
      'CREATE INDEX notifications_due ON notifications (status, order_at)',
      `CREATE TABLE notification_receipts (
        notification_id INTEGER NOT NULL REFERENCES notifications(id),
        recipient_id TEXT NOT NULL,
        read_at TEXT NOT NULL,
        PRIMARY KEY (notification_id, recipient_id)
      )`,
      'CREATE INDEX notification_receipts_recipient ON notification_receipts (recipient_id)',
      `CREATE TABLE push_subscriptions (
        id INTEGER PRIMARY KEY,
        app_id INTEGER NOT NULL REFERENCES apps(id),
        user_id INTEGER,
        user_record TEXT,
        device TEXT NOT NULL,
        platform TEXT NOT NULL,
        ip_address TEXT NOT NULL DEFAULT '',
        token TEXT NOT NULL,
        uuid TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        UNIQUE (app_id, token)
      )`,
      `CREATE TABLE push_outbox (
        id INTEGER PRIMARY KEY,
        app_id INTEGER NOT NULL REFERENCES apps(id),
        notification_id INTEGER NOT NULL REFERENCES notifications(id),
        subscription_id INTEGER NOT NULL,
        payload TEXT NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('pending', 'sending', 'sent', 'failed', 'cancelled')),
        attempts INTEGER NOT NULL DEFAULT 0,
        next_attempt_at TEXT NOT NULL,
        lease_until TEXT,
        claim_id TEXT,
        badge INTEGER,
        last_error TEXT,
        sent_at TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      )`,
      'CREATE INDEX push_outbox_due ON push_outbox (state, next_attempt_at)',
      'CREATE INDEX push_outbox_notification ON push_outbox (notification_id)',
      `CREATE TABLE push_attempts (
        id INTEGER PRIMARY KEY,
        outbox_id INTEGER NOT NULL REFERENCES push_outbox(id),
        attempt INTEGER NOT NULL,
        attempted_at TEXT NOT NULL,
        ok INTEGER NOT NULL,
        error TEXT
      )`,
      'CREATE INDEX push_attempts_outbox ON push_attempts (outbox_id)',
    ],
  },
];
