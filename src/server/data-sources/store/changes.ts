import type { Queryable, SqlValue } from '../../db/database.js';

/**
 * Data-access layer of `data_source_changes` (migration 0010): the undo records that let a version be rebuilt
 * from the current entries. Every write function of entries.ts records, in SQL and before it changes anything,
 * the prior state of each entry it touches; the write's version bump stamps the records with the new
 * `data_version`. Nothing is recorded while the data source has no version to rebuild.
 */

/** The entries of the data source (alias `e`) whose prior state is kept: only while a version needs them. */
const TRACKED = `EXISTS (SELECT 1 FROM data_source_versions v WHERE v.data_source_id = e.data_source_id AND v.data_version IS NOT NULL)`;

/** Records the current state of the entries matching `condition` (on alias `e`) as existing before the write. */
export async function recordExisting(db: Queryable, condition: string, params: readonly SqlValue[]): Promise<void> {
  await db.run(
    `INSERT INTO data_source_changes (data_source_id, version, entry_id, existed, data, sort_order, created_at, updated_at)
     SELECT e.data_source_id, 0, e.id, 1, e.data, e.sort_order, e.created_at, e.updated_at
     FROM data_source_entries e WHERE ${condition} AND ${TRACKED}
     ON CONFLICT DO NOTHING`,
    params as SqlValue[],
  );
}

/** Records entries the write just inserted (matching `condition`) as absent before it. */
export async function recordInserted(db: Queryable, condition: string, params: readonly SqlValue[]): Promise<void> {
  await db.run(
    `INSERT INTO data_source_changes (data_source_id, version, entry_id, existed)
     SELECT e.data_source_id, 0, e.id, 0 FROM data_source_entries e WHERE ${condition} AND ${TRACKED}
     ON CONFLICT DO NOTHING`,
    params as SqlValue[],
  );
}

/**
 * Records a batch of entries the write just inserted with fresh ids `first`…`last` (no id in between belongs to
 * anything else of this data source: ids are never given twice, and writers of one data source are serialized).
 */
export async function recordInsertedRange(db: Queryable, dataSourceId: number, first: number, last: number): Promise<void> {
  await db.run(
    `INSERT INTO data_source_changes (data_source_id, version, entry_id, existed, last_entry_id)
     SELECT e.id, 0, CAST(? AS INTEGER), 0, CAST(? AS INTEGER) FROM data_sources e
     WHERE e.id = ? AND EXISTS (SELECT 1 FROM data_source_versions v WHERE v.data_source_id = e.id AND v.data_version IS NOT NULL)
     ON CONFLICT DO NOTHING`,
    [first, last, dataSourceId],
  );
}

/** Stamps the write's records with the version it produced (called by the version bump, in the same transaction). */
export async function stampChanges(db: Queryable, dataSourceId: number, version: number): Promise<void> {
  await db.run('UPDATE data_source_changes SET version = ? WHERE data_source_id = ? AND version = 0', [version, dataSourceId]);
}

export interface ChangeRow {
  version: number;
  entry_id: number;
  existed: number;
  data: string | null;
  sort_order: number | null;
  created_at: string | null;
  updated_at: string | null;
  /** Set on a record of a range of fresh inserts (`entry_id` … `last_entry_id`). */
  last_entry_id: number | null;
}

/** The undo records of every write after `version`, newest write first. */
export async function changesAfter(db: Queryable, dataSourceId: number, version: number): Promise<ChangeRow[]> {
  return db.all<ChangeRow>(
    `SELECT version, entry_id, existed, data, sort_order, created_at, updated_at, last_entry_id FROM data_source_changes
     WHERE data_source_id = ? AND version > ? ORDER BY version DESC`,
    [dataSourceId, version],
  );
}

/** Drops the records no kept version needs (all of them when no version is rebuilt from changes). */
export async function pruneChanges(db: Queryable, dataSourceId: number): Promise<void> {
  const oldest = await db.get<{ v: number | null }>(
    'SELECT MIN(data_version) AS v FROM data_source_versions WHERE data_source_id = ? AND data_version IS NOT NULL',
    [dataSourceId],
  );
  if (oldest?.v === null || oldest?.v === undefined) await db.run('DELETE FROM data_source_changes WHERE data_source_id = ?', [dataSourceId]);
  else await db.run('DELETE FROM data_source_changes WHERE data_source_id = ? AND version > 0 AND version <= ?', [dataSourceId, oldest.v]);
}
