import type { Queryable } from '../db/database.js';
import { withGrant, type Grant } from './access.js';
import { SCAN_PAGE } from './scan-select.js';
import { entryFromRow, entryRowsAfter } from './store/entries.js';
import type { EntryRecord } from './types.js';

/**
 * The entries a query delete's `where` matches, when the database cannot find them (the translation is not exact,
 * or the delete rule hides columns) and the data source is larger than the entry cache: read by id in pages of
 * SCAN_PAGE inside the delete's transaction (which no other write interleaves), each page matched against what the
 * rule shows and dropped. Only the matches are kept, oldest id first, as the SQL and the in-memory paths give them.
 */
export async function scanMatches(
  tx: Queryable,
  dataSourceId: number,
  grant: Grant,
  test: (entry: EntryRecord) => boolean,
): Promise<{ id: number; data: Record<string, unknown> }[]> {
  const matches: { id: number; data: Record<string, unknown> }[] = [];
  for (let after = 0; ; ) {
    const rows = await entryRowsAfter(tx, dataSourceId, after, SCAN_PAGE);
    if (rows.length === 0) break;
    after = rows[rows.length - 1]!.id;
    const entries = rows.map((row) => entryFromRow(dataSourceId, row));
    const visible = withGrant(entries, grant);
    for (let i = 0; i < entries.length; i++) if (test(visible[i]!)) matches.push({ id: entries[i]!.id, data: entries[i]!.data });
    if (rows.length < SCAN_PAGE) break;
  }
  return matches;
}
