import { idText } from '../sql/dialect.js';
import { raw, sql, type Sql } from '../sql/fragment.js';

/**
 * The entries of a version as SQL over `data_source_entries` and the undo records of `data_source_changes`
 * (changes.ts), so that the database, not the server, holds the data set while it is read or restored. An
 * entry's state at the version (`data_version` V) is the pre-image of the OLDEST record after V for its id
 * (absent when that record says it did not exist), else its current row; an id inside a range of fresh inserts
 * recorded after V did not exist at V (insertedAfter). This is what versions.ts's `rebuildVersion` computes in JS (kept as the
 * tests' oracle).
 */

/** The oldest point record after V of each id changed since (`entry_id`, `version`): one GROUP BY over the records after V. */
function oldestRecords(dataSourceId: number, dataVersion: number): Sql {
  return sql`SELECT x.entry_id, MIN(x.version) AS version FROM data_source_changes x
    WHERE x.data_source_id = ${idText(dataSourceId)} AND x.version > ${dataVersion} AND x.last_entry_id IS NULL GROUP BY x.entry_id`;
}

/** The ids with a point record after V (a subquery for `IN`). */
export function changedIds(dataSourceId: number, dataVersion: number): Sql {
  return sql`SELECT x.entry_id FROM data_source_changes x WHERE x.data_source_id = ${idText(dataSourceId)} AND x.version > ${dataVersion} AND x.last_entry_id IS NULL`;
}

/**
 * `id` (an SQL expression) was given after V, so the entry did not exist at V; never NULL. Ids are given in
 * increasing order and never twice (SQLite AUTOINCREMENT, a PostgreSQL sequence; writers of one data source are
 * serialized), and a range of fresh inserts is above every id the data source ever had: so an id of a range
 * recorded after V lies at or above the lowest such range's first id, and no id at or above it existed at V
 * (a restore puts back only ids given before). One uncorrelated subquery instead of a test of every range.
 */
export function insertedAfter(dataSourceId: number, dataVersion: number, id: string): Sql {
  const first = sql`SELECT MIN(x.entry_id) FROM data_source_changes x
    WHERE x.data_source_id = ${idText(dataSourceId)} AND x.version > ${dataVersion} AND x.last_entry_id IS NOT NULL`;
  return sql`(${raw(id)} >= COALESCE((${first}), ${raw(id)} + 1))`;
}

/**
 * The entries the version held that were changed since, as they were (columns `id`, `data_source_id`, `data`,
 * `sort_order`, `created_at`, `updated_at`).
 */
export function changedEntriesAtVersion(dataSourceId: number, dataVersion: number): Sql {
  return sql`SELECT p.entry_id AS id, p.data_source_id, p.data, p.sort_order, p.created_at, p.updated_at FROM (${oldestRecords(dataSourceId, dataVersion)}) f
    JOIN data_source_changes p ON p.data_source_id = ${idText(dataSourceId)} AND p.version > ${dataVersion} AND p.version = f.version AND p.entry_id = f.entry_id
    WHERE p.existed = 1 AND NOT ${insertedAfter(dataSourceId, dataVersion, 'p.entry_id')}`;
}

/** The entries of the version as alias `e` (columns id, data, sort_order, created_at, updated_at; `doc` too with `withDoc`, PostgreSQL). */
export function versionEntriesSource(dataSourceId: number, dataVersion: number, options: { withDoc?: boolean } = {}): Sql {
  const ds = idText(dataSourceId);
  const unchanged = sql`SELECT c.id, c.data, c.sort_order, c.created_at, c.updated_at FROM data_source_entries c
    LEFT JOIN (${oldestRecords(dataSourceId, dataVersion)}) f ON f.entry_id = c.id
    WHERE c.data_source_id = ${ds} AND f.entry_id IS NULL AND NOT ${insertedAfter(dataSourceId, dataVersion, 'c.id')}`;
  const changed = sql`SELECT v.id, v.data, v.sort_order, v.created_at, v.updated_at FROM (${changedEntriesAtVersion(dataSourceId, dataVersion)}) v`;
  const doc = options.withDoc ? ', u.data::jsonb AS doc' : '';
  return sql`(SELECT u.id, u.data, u.sort_order, u.created_at, u.updated_at${raw(doc)} FROM (${unchanged} UNION ALL ${changed}) u) e`;
}
