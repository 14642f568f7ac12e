import { HttpError } from '../http/errors.js';
import { withGrant, type Grant } from './access.js';
import type { Queryable } from '../db/database.js';
import { indexedPaths } from './indexes.js';
import type { Core } from './core.js';
import { type Budget, filterEntries, queryTimeout } from './query/filter-entries.js';
import { sortEntries } from './query/order.js';
import type { EntryRecord, JoinWhere } from './query/types.js';
import { ATTEMPTS, readCandidates, SCAN_PAGE } from './scan-select.js';
import { type Candidates, findCandidates, scanPage } from './sql/candidates.js';
import type { Cond } from './sql/conditions.js';
import { indexablePaths } from './sql/prefilter.js';
import { dataVersion } from './store/data-sources.js';
import { entryFromRow } from './store/entries.js';

/** Runs one read of a pass: null when the data made the database refuse the statement. */
type Reader = <T>(read: (q: Queryable) => Promise<T>) => Promise<T | null>;

/**
 * The entries of a joined data source the entry cache does not hold that its `where` matches (every entry when it
 * has none), as of one state of the data set, read in pages under the query's budget: the part of the `where` the
 * database can test (`cond`) picks the candidates, the JS evaluator matches each page as it is read, and only the
 * matches are kept. A join that appends its best `limit` (no `on`, `where.best`, a limit up to half the cap)
 * keeps only about those, as a scanned select keeps its page's reach; any other keeps at most
 * `limits.joinEntries`: past that 422 JOIN_TOO_LARGE, so the memory of a join is bounded by configuration, not by
 * the joined data source.
 *
 * Each pass checks `data_version` before and after and starts over when a write came between; after ATTEMPTS, one
 * last pass reads plain pages inside a transaction (one state: SQLite's write lock, PostgreSQL's SERIALIZABLE
 * snapshot), under the same budget and bounds. null only when the cache holds the data set (the caller reads it
 * there).
 */
export async function joinedEntries(
  core: Core,
  dataSourceId: number,
  grant: Grant,
  where: JoinWhere,
  cond: Cond | null,
  budget: Budget,
): Promise<EntryRecord[] | null> {
  const { db, limits } = core.ctx;
  const version = await dataVersion(db, dataSourceId);
  if (version === undefined || core.cache.peek(dataSourceId, version) || (await core.cache.holdsDataSet(db, dataSourceId))) return null;
  const cap = limits.joinEntries;
  // Kept between prunings: up to twice the count plus a page, so within the cap when the count is half of it.
  const best = where.best && 2 * where.best.count <= cap ? where.best : undefined;
  const indexed = cond ? await indexedPaths(db, dataSourceId) : new Set<string>();
  if (cond) core.autoIndexes.note(dataSourceId, indexablePaths(cond, new Set()), indexed);
  let implied = cond;

  /** One pass over the data set; null when a candidates statement was refused (`implied` is then dropped). */
  const pass = async (read: Reader): Promise<EntryRecord[] | null> => {
    let candidates: Candidates | null = null;
    if (implied) {
      const picked = implied;
      candidates = await read((q) => findCandidates(q, db.dialect, dataSourceId, picked, indexed));
      if (!candidates) {
        implied = null;
        return null;
      }
    }
    let kept: EntryRecord[] = [];
    for (let after = 0; ; ) {
      if (Date.now() > budget.deadline) throw queryTimeout(budget, where.field);
      const from = candidates;
      const page = await read((q) => scanPage(q, db.dialect, dataSourceId, after, SCAN_PAGE, from));
      if (!page) {
        // Data the SQL functions refuse ("\u0000" is not valid jsonb): every entry is a candidate, read again. Plain
        // pages apply no SQL function to the data.
        implied = null;
        return null;
      }
      const entries = withGrant(
        page.rows.map((row) => entryFromRow(dataSourceId, row)),
        grant,
      );
      for (const entry of filterEntries(entries, where.test, budget, where.field)) kept.push(entry);
      if (best) {
        if (kept.length >= 2 * best.count + SCAN_PAGE) kept = sortEntries(kept, best.order, best.count);
      } else if (kept.length > cap)
        throw new HttpError(
          422,
          'JOIN_TOO_LARGE',
          `${where.field}: more than ${cap} entries of the joined data source match (limits.joinEntries); narrow the join's where`,
          { limit: cap },
        );
      after = page.last;
      if (page.done) return kept;
    }
  };

  const bounded: Reader = (read) => readCandidates(db, budget, read, where.field);
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const start = attempt === 0 ? version : await dataVersion(db, dataSourceId);
    const matches = await pass(bounded);
    // A refused candidates statement: the same attempt again, on plain pages.
    if (!matches) attempt--;
    else if ((await dataVersion(db, dataSourceId)) === start) return matches;
  }
  implied = null;
  return (await db.transaction((tx) => pass(async (read) => read(tx))))!;
}
