import type { Migration } from '../migrate.js';

/**
 * Client tokens (`kind = 'client'`, docs/security.md "Token kinds"): the CHECK of `tokens.kind` of 0001 allows
 * 'api' and 'studio' only. SQLite cannot change a CHECK in place, so the table is rebuilt (portable on both
 * engines: nothing references `tokens`; ids are kept, and on PostgreSQL the adapter moves the identity
 * sequence past them after the explicit-id copy).
 */
export const clientTokenMigrations: Migration[] = [
  {
    id: '0007_client_tokens',
    up: [
      `CREATE TABLE tokens_next (
        id INTEGER PRIMARY KEY,
        token TEXT NOT NULL UNIQUE,
        kind TEXT NOT NULL CHECK (kind IN ('client', 'api', 'studio')),
        name TEXT NOT NULL DEFAULT '',
        organization_id INTEGER NOT NULL REFERENCES organizations(id),
        app_id INTEGER REFERENCES apps(id),
        created_at TEXT NOT NULL
      )`,
      `INSERT INTO tokens_next (id, token, kind, name, organization_id, app_id, created_at)
        SELECT id, token, kind, name, organization_id, app_id, created_at FROM tokens`,
      `DROP TABLE tokens`,
      `ALTER TABLE tokens_next RENAME TO tokens`,
    ],
  },
];
