import type { Migration } from '../migrate.js';

/**
 * Issue 14, item 3. `data_source_entries_order` serves the default order (`order` ASC, `id` DESC) of a page,
 * so a first page stops after its rows instead of sorting the data source. `data_source_indexes` lists the
 * expression indexes of data paths (data-sources/indexes.ts: declared in `definition.indexes`, or created
 * automatically for paths queried often); each is a partial index named `iar_dsi_<dataSourceId>_<hash>`.
 */
export const dataSourceIndexMigrations: Migration[] = [
  {
    id: '0012_data_source_indexes',
    up: [
      `CREATE INDEX data_source_entries_order ON data_source_entries (data_source_id, sort_order, id DESC)`,
      `CREATE TABLE data_source_indexes (
        data_source_id INTEGER NOT NULL REFERENCES data_sources(id) ON DELETE CASCADE,
        path TEXT NOT NULL,
        origin TEXT NOT NULL,
        name TEXT NOT NULL,
        created_at TEXT NOT NULL,
        PRIMARY KEY (data_source_id, path)
      )`,
    ],
  },
];
