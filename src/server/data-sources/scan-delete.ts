import type { Queryable } from '../db/database.js';
import { withGrant, type Grant } from './access.js';
import { SCAN_PAGE } from './scan-select.js';
import { candidatePage, findCandidates } from './sql/candidates.js';
import type { Cond } from './sql/conditions.js';
import { isDataError, SqlMatchFailed } from './sql-delete.js';
import { entryFromRow, entryRowsAfter, type RawEntryRow } from './store/entries.js';
import type { EntryRecord } from './types.js';

/**
 * The entries a query delete's `where` matches, when the database cannot find them (the translation is not exact,
 * or the delete rule hides columns) and the data source is larger than the entry cache: read by id in pages of
 * SCAN_PAGE inside the delete's transaction (which no other write interleaves), each page matched against what the
 * rule shows and dropped. Only the matches are kept, oldest id first, as the SQL and the in-memory paths give them.
 * `implied` (scan-select.ts `candidatesCond`): the part of the `where` the database tests, so only the entries
 * that meet it are read (through an index of `indexed` when one serves it, sql/candidates.ts); a statement the data makes the database refuse throws SqlMatchFailed.
 */
export async function scanMatches(
  tx: Queryable,
  engine: 'sqlite' | 'postgres',
  dataSourceId: number,
  grant: Grant,
  test: (entry: EntryRecord) => boolean,
  implied: Cond | null,
  indexed: ReadonlySet<string>,
): Promise<{ id: number; data: Record<string, unknown> }[]> {
  const matches: { id: number; data: Record<string, unknown> }[] = [];
  const refused = (error: unknown) => (isDataError(error) ? new SqlMatchFailed(error) : error);
  const candidates = implied && (await findCandidates(tx, engine, dataSourceId, implied, indexed).catch((error) => Promise.reject(refused(error))));
  for (let after = 0; ; ) {
    let rows: RawEntryRow[];
    let done: boolean;
    if (candidates) {
      const page = await candidatePage(tx, engine, dataSourceId, after, SCAN_PAGE, candidates).catch((error) => Promise.reject(refused(error)));
      ({ rows, done } = page);
      after = page.last;
    } else {
      rows = await entryRowsAfter(tx, dataSourceId, after, SCAN_PAGE);
      done = rows.length < SCAN_PAGE;
      if (rows.length > 0) after = rows[rows.length - 1]!.id;
    }
    const entries = rows.map((row) => entryFromRow(dataSourceId, row));
    const visible = withGrant(entries, grant);
    for (let i = 0; i < entries.length; i++) if (test(visible[i]!)) matches.push({ id: entries[i]!.id, data: entries[i]!.data });
    if (done) break;
  }
  return matches;
}
