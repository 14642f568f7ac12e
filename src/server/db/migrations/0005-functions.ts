import type { Migration } from '../migrate.js';

/** Custom function packages stored per app (the function catalog). Ids: `0005_<name>`, then `0005b_<name>` for later changes. */
export const functionMigrations: Migration[] = [
  {
    id: '0005_custom_functions',
    up: [
      `CREATE TABLE custom_functions (
        id INTEGER PRIMARY KEY,
        app_id INTEGER NOT NULL REFERENCES apps(id),
        package TEXT NOT NULL,
        name TEXT NOT NULL,
        description TEXT NOT NULL DEFAULT '',
        code TEXT NOT NULL,
        environment TEXT NOT NULL DEFAULT 'any' CHECK (environment IN ('server', 'client', 'any')),
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        UNIQUE (app_id, package)
      )`,
    ],
  },
];
