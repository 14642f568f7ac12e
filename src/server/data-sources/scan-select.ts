import { HttpError } from '../http/errors.js';
import { withGrant, type Grant } from './access.js';
import type { Core } from './core.js';
import type { CompiledQuery } from './query/compile.js';
import { sortEntries } from './query/order.js';
import { canonicalKey } from './query/distinct.js';
import { aggregateSelect, distinctSelect, filterEntries, joinedSelect, loadJoins, meetsRequiredJoins, pageReach, plainSelect } from './query/run.js';
import type { EntryRecord, JoinLoader, QueryResult } from './query/types.js';
import { dataVersion } from './store/data-sources.js';
import { countEntries, entryFromRow, entryRowsAfter } from './store/entries.js';

/** Rows read per statement. */
export const SCAN_PAGE = 2_000;
/** Scans started over when a write changed the data set during one, before the whole data set is read at once. */
const ATTEMPTS = 3;

/**
 * A select the SQL translation leaves to the JS evaluator (docs/sql.md), on a data source the entry cache does not
 * hold (more than `limits.entryCacheEntries` entries): instead of reading the whole data set for the request, the
 * entries are read by id in pages of SCAN_PAGE, each page matched and dropped (docs/data-sources.md,
 * "Performance"). Only the matches that can still be on the page are kept: the first offset + limit in the query's
 * order (a total order, ties ending on the unique id, so the best k of each batch are among the best k of all),
 * or every match when there is no limit (then the answer itself holds them). The answer is that of one
 * `data_version`: a scan during which a write bumped it starts over, and after ATTEMPTS the caller reads the data
 * set at once as before. With `distinct`, the first match of each distinct row is kept (all of them: the count and
 * the page need every row). With `aggregate`, the pipeline runs over the kept matches (the page of them), as
 * runQuery runs it. With joins (`joinLoader` reads the joined data sources, whole, as runQuery does), a parent that
 * misses a `required` join is dropped as it is matched, so the kept ones are the page's; joins with `distinct` are
 * not done here (null: the caller's path).
 * The time budget `limits.aggregateTimeoutMs` covers the whole scan (422 QUERY_TIMEOUT).
 */
export async function scanSelect(
  core: Core,
  dataSourceId: number,
  grant: Grant,
  compiled: CompiledQuery,
  joinLoader?: JoinLoader,
): Promise<QueryResult | null> {
  const joined = compiled.joins.length > 0;
  if (joined && (compiled.body.distinct || !joinLoader)) return null;
  const { db, limits } = core.ctx;
  const version = await dataVersion(db, dataSourceId);
  if (version === undefined || core.cache.peek(dataSourceId, version)) return null;
  if (core.cache.holds((await countEntries(db, dataSourceId)).count)) return null;
  // The joined data sources are read first: a parent that misses a `required` join is dropped as it is matched.
  const loaded = joined ? await loadJoins(compiled, joinLoader!) : [];
  const required = loaded.some((join) => join.join.required);
  const timeoutMs = limits.aggregateTimeoutMs;
  const deadline = Date.now() + timeoutMs;
  const reach = pageReach(compiled);
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const start = attempt === 0 ? version : await dataVersion(db, dataSourceId);
    let kept: EntryRecord[] = [];
    let total = 0;
    /** With `distinct`: for each distinct row, the match that comes first in the query's order. */
    const firstOfRow = compiled.body.distinct ? new Map<string, EntryRecord>() : undefined;
    let after = 0;
    for (;;) {
      if (Date.now() > deadline)
        throw new HttpError(422, 'QUERY_TIMEOUT', `where: matching took longer than ${timeoutMs} ms (limits.aggregateTimeoutMs)`, { limit: timeoutMs });
      const rows = await entryRowsAfter(db, dataSourceId, after, SCAN_PAGE);
      if (rows.length === 0) break;
      after = rows[rows.length - 1]!.id;
      const entries = withGrant(
        rows.map((row) => entryFromRow(dataSourceId, row)),
        grant,
      );
      let matches = filterEntries(entries, compiled.where, timeoutMs, deadline);
      if (required) matches = matches.filter((entry) => meetsRequiredJoins(loaded, entry));
      if (firstOfRow) {
        keepFirstOfRows(firstOfRow, matches, compiled);
        if (rows.length < SCAN_PAGE) break;
        continue;
      }
      total += matches.length;
      kept = kept.concat(matches);
      if (reach > 0 && kept.length >= 2 * reach + SCAN_PAGE) kept = sortEntries(kept, compiled.order, reach);
      if (rows.length < SCAN_PAGE) break;
    }
    if ((await dataVersion(db, dataSourceId)) === start)
      return compiled.body.aggregate
        ? aggregateSelect(kept, compiled, { bytes: limits.aggregateBytes, timeoutMs, depth: limits.bodyDepth })
        : firstOfRow
          ? distinctSelect([...firstOfRow.values()], compiled)
          : joined
            ? joinedSelect(kept, compiled, loaded, total - kept.length)
            : plainSelect(kept, compiled, total);
  }
  return null;
}

/** Keeps, for each row `matches` shape to (`attributes`), the match that comes first in the query's (total) order. */
function keepFirstOfRows(firstOfRow: Map<string, EntryRecord>, matches: readonly EntryRecord[], compiled: CompiledQuery): void {
  const projection = compiled.projection;
  for (const entry of matches) {
    const key = canonicalKey(projection === null ? entry : projection(entry));
    const earlier = firstOfRow.get(key);
    if (!earlier || sortEntries([earlier, entry], compiled.order, 0)[0] === entry) firstOfRow.set(key, entry);
  }
}
