import type { Migration } from '../migrate.js';

/**
 * Versions as changes (issue 14): instead of a copy of the whole data source per version, every write records the
 * state before it of each entry it touches (`existed` 0: the entry did not exist, i.e. the write inserted it), in
 * `data_source_changes`, stamped with the `data_version` the write produced (0 until the write's version bump).
 * A version records the `data_version` it stands for; it is rebuilt on read by undoing the newer changes. Rows are
 * only written while the data source has a version, and pruned with the versions. A batch of fresh inserts is one
 * record of its id range (`entry_id` … `last_entry_id`): fresh ids are above every id the data source ever had. Versions taken before this
 * migration keep their snapshot (`data_version` NULL).
 */
export const versionChangeMigrations: Migration[] = [
  {
    id: '0010_data_source_changes',
    up: [
      `CREATE TABLE data_source_changes (
        data_source_id INTEGER NOT NULL REFERENCES data_sources(id) ON DELETE CASCADE,
        version INTEGER NOT NULL,
        entry_id INTEGER NOT NULL,
        existed INTEGER NOT NULL,
        data TEXT,
        sort_order INTEGER,
        created_at TEXT,
        updated_at TEXT,
        last_entry_id INTEGER,
        PRIMARY KEY (data_source_id, version, entry_id)
      )`,
      `ALTER TABLE data_source_versions ADD COLUMN data_version INTEGER`,
    ],
  },
];
