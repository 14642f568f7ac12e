import type { Migration } from '../migrate.js';

export const coreMigrations: Migration[] = [
  {
    id: '0001_core',
    up: [
      `CREATE TABLE organizations (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL,
        settings TEXT NOT NULL DEFAULT '{}',
        created_at TEXT NOT NULL
      )`,
      `CREATE TABLE apps (
        id INTEGER PRIMARY KEY,
        organization_id INTEGER NOT NULL REFERENCES organizations(id),
        name TEXT NOT NULL,
        created_at TEXT NOT NULL
      )`,
      `CREATE TABLE tokens (
        id INTEGER PRIMARY KEY,
        token TEXT NOT NULL UNIQUE,
        kind TEXT NOT NULL CHECK (kind IN ('api', 'studio')),
        name TEXT NOT NULL DEFAULT '',
        organization_id INTEGER NOT NULL REFERENCES organizations(id),
        app_id INTEGER REFERENCES apps(id),
        created_at TEXT NOT NULL
      )`,
      `CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL)`,
    ],
  },
];
