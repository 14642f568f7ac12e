import type { Migration } from '../migrate.js';

/** Tables of data sources, entries, versions, files, logs. Ids: `0002_<name>`, then `0002b_<name>` for later changes. */
export const dataSourceMigrations: Migration[] = [
  {
    id: '0002_data_sources',
    up: [
      // `data_version` grows on every change of the entries: caches of parsed entries are keyed by it,
      // so they stay correct when several server processes share one database.
      // AUTOINCREMENT: ids of deleted data sources and entries are never given again, so a stale id
      // held by a client can never reach another data source or entry.
      `CREATE TABLE data_sources (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        organization_id INTEGER NOT NULL REFERENCES organizations(id),
        app_id INTEGER REFERENCES apps(id),
        name TEXT NOT NULL,
        type TEXT,
        public INTEGER NOT NULL DEFAULT 0,
        encrypted INTEGER NOT NULL DEFAULT 0,
        columns TEXT,
        hooks TEXT NOT NULL DEFAULT '[]',
        access_rules TEXT NOT NULL DEFAULT '[]',
        definition TEXT NOT NULL DEFAULT '{}',
        app_capabilities TEXT,
        data_version INTEGER NOT NULL DEFAULT 0,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        UNIQUE (organization_id, name)
      )`,
      `CREATE INDEX data_sources_app ON data_sources (app_id)`,
      // Restoring a version brings its entry ids back: they can only ever have belonged to this data source.
      `CREATE TABLE data_source_entries (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        data_source_id INTEGER NOT NULL REFERENCES data_sources(id) ON DELETE CASCADE,
        data TEXT NOT NULL,
        sort_order INTEGER NOT NULL DEFAULT 0,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      )`,
      `CREATE INDEX data_source_entries_source ON data_source_entries (data_source_id, id)`,
      `CREATE TABLE data_source_snapshots (
        key TEXT PRIMARY KEY,
        data TEXT NOT NULL
      )`,
      `CREATE TABLE data_source_versions (
        id INTEGER PRIMARY KEY,
        data_source_id INTEGER NOT NULL REFERENCES data_sources(id) ON DELETE CASCADE,
        action TEXT NOT NULL,
        columns TEXT NOT NULL,
        entry_count INTEGER NOT NULL,
        snapshot_key TEXT NOT NULL,
        user_id INTEGER,
        user_name TEXT NOT NULL DEFAULT '',
        page_id INTEGER,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      )`,
      `CREATE INDEX data_source_versions_source ON data_source_versions (data_source_id, id)`,
      `CREATE TABLE data_source_files (
        id INTEGER PRIMARY KEY,
        data_source_id INTEGER NOT NULL REFERENCES data_sources(id) ON DELETE CASCADE,
        organization_id INTEGER NOT NULL,
        name TEXT NOT NULL,
        content_type TEXT NOT NULL,
        size INTEGER NOT NULL,
        path TEXT NOT NULL,
        encrypted INTEGER NOT NULL DEFAULT 0,
        iv TEXT,
        auth_tag TEXT,
        created_at TEXT NOT NULL
      )`,
      `CREATE INDEX data_source_files_source ON data_source_files (data_source_id)`,
      // Generic log records: data source entry events here, app action runs later.
      `CREATE TABLE logs (
        id INTEGER PRIMARY KEY,
        type TEXT NOT NULL,
        app_id INTEGER,
        organization_id INTEGER,
        data_source_id INTEGER,
        data_source_entry_id INTEGER,
        data TEXT NOT NULL DEFAULT '{}',
        created_at TEXT NOT NULL
      )`,
      `CREATE INDEX logs_app_type_created ON logs (app_id, type, created_at)`,
      `CREATE INDEX logs_data_source ON logs (data_source_id, created_at)`,
    ],
  },
];
