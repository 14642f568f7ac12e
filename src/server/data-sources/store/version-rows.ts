import { idText } from '../sql/dialect.js';
import { raw, sql, type Sql } from '../sql/fragment.js';

/**
 * The entries of a version as one SQL statement over `data_source_entries` and the undo records of
 * `data_source_changes` (changes.ts), so that the database, not the server, holds the data set while it is read.
 * An entry's state at the version (`data_version` V) is the pre-image of the OLDEST record after V for its id
 * (absent when that record says it did not exist), else its current row; an id inside a range of fresh inserts
 * recorded after V did not exist at V. This is what versions.ts's `rebuildVersion` computes in JS (kept as the
 * tests' oracle).
 */

/** The entries of the version as alias `e` (columns id, data, sort_order, created_at, updated_at; `doc` too with `withDoc`, PostgreSQL). */
export function versionEntriesSource(dataSourceId: number, dataVersion: number, options: { withDoc?: boolean } = {}): Sql {
  const ds = idText(dataSourceId);
  const after = sql`x.data_source_id = ${ds} AND x.version > ${dataVersion}`;
  // The oldest point record of each id changed after V (one GROUP BY over the records after V).
  const oldest = sql`SELECT x.entry_id, MIN(x.version) AS version FROM data_source_changes x WHERE ${after} AND x.last_entry_id IS NULL GROUP BY x.entry_id`;
  const rows = sql`SELECT c.id, c.data, c.sort_order, c.created_at, c.updated_at FROM data_source_entries c
    LEFT JOIN (${oldest}) f ON f.entry_id = c.id WHERE c.data_source_id = ${ds} AND f.entry_id IS NULL
    UNION ALL
    SELECT p.entry_id, p.data, p.sort_order, p.created_at, p.updated_at FROM (${oldest}) f
    JOIN data_source_changes p ON p.data_source_id = ${ds} AND p.version = f.version AND p.entry_id = f.entry_id WHERE p.existed = 1`;
  // Ranges of fresh inserts: only ids from the lowest range's first id up can lie in one (the test per range
  // is skipped below it, where the entries that existed before the ranges are).
  const ranges = sql`data_source_changes x WHERE ${after} AND x.last_entry_id IS NOT NULL`;
  const doc = options.withDoc ? ', v.data::jsonb AS doc' : '';
  return sql`(SELECT v.id, v.data, v.sort_order, v.created_at, v.updated_at${raw(doc)} FROM (${rows}) v
    WHERE NOT (v.id >= COALESCE((SELECT MIN(x.entry_id) FROM ${ranges}), v.id + 1)
      AND EXISTS (SELECT 1 FROM ${ranges} AND v.id BETWEEN x.entry_id AND x.last_entry_id))) e`;
}
