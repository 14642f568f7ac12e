import { HttpError } from '../http/errors.js';
import { hasColumnFilter, withGrant, type Grant } from './access.js';
import type { Database, Queryable } from '../db/database.js';
import { type Candidates, findCandidates, scanPage } from './sql/candidates.js';
import { indexablePaths } from './sql/prefilter.js';
import { indexedPaths } from './indexes.js';
import { columnsOf, type Cond } from './sql/conditions.js';
import { withTimeBudget } from './sql/time-budget.js';
import { impliedWhere } from './sql/where.js';
import { isDataError } from './sql-delete.js';
import { visible } from './sql-query.js';
import type { Core } from './core.js';
import type { CompiledQuery } from './query/compile.js';
import { sortEntries } from './query/order.js';
import { canonicalKey } from './query/distinct.js';
import { type Budget, filterEntries, queryTimeout, startBudget } from './query/filter-entries.js';
import { mayExceed, tooManyRows } from './query/answer-rows.js';
import { aggregateSelect, distinctSelect, joinedRow, joinedSelect, loadJoins, meetsRequiredJoins, pageReach, plainSelect, withDeadline } from './query/run.js';
import type { EntryRecord, JoinLoader, QueryResult } from './query/types.js';
import { dataVersion } from './store/data-sources.js';
import { entryFromRow } from './store/entries.js';

/** Rows read per statement. */
export const SCAN_PAGE = 2_000;
/** Scans started over when a write changed the data set during one, before the whole data set is read at once. */
export const ATTEMPTS = 3;

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
 * misses a `required` join is dropped as it is matched, so the kept ones are the page's; with `distinct` too, rows
 * being compared with their `joins.<Name>` values (keepFirstOfRows).
 * The time budget `limits.aggregateTimeoutMs` covers the whole scan (422 QUERY_TIMEOUT).
 */
export async function scanSelect(
  core: Core,
  dataSourceId: number,
  grant: Grant,
  compiled: CompiledQuery,
  joinLoader?: JoinLoader,
  budget: Budget = startBudget(core.ctx.limits.aggregateTimeoutMs),
): Promise<QueryResult | null> {
  const joined = compiled.joins.length > 0;
  if (joined && !joinLoader) return null;
  const { db, limits } = core.ctx;
  const version = await dataVersion(db, dataSourceId);
  if (version === undefined || core.cache.peek(dataSourceId, version)) return null;
  if (await core.cache.holdsDataSet(db, dataSourceId)) return null;
  // The joined data sources are read first: a parent that misses a `required` join is dropped as it is matched.
  const loaded = joined ? await loadJoins(compiled, joinLoader!, budget) : [];
  const required = loaded.some((join) => join.join.required);
  // With `distinct`, rows are compared as returned: with joins, their `joins.<Name>` values too.
  const row = joined ? joinedRow(compiled, loaded) : compiled.projection;
  const reach = pageReach(compiled);
  // A select (or an aggregate's input) past limits.queryRows is refused as soon as the scan has matched that many.
  const cap = limits.queryRows;
  const capAt = mayExceed(compiled.body.limit, cap) ? (compiled.body.offset ?? 0) + cap : Infinity;
  // The part of the `where` the database can test picks the candidates (null: every entry is one).
  let implied = candidatesCond(compiled.body.where, grant);
  const indexed = implied ? await indexedPaths(db, dataSourceId) : new Set<string>();
  if (implied) core.autoIndexes.note(dataSourceId, indexablePaths(implied, new Set()), indexed);
  attempts: for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const start = attempt === 0 ? version : await dataVersion(db, dataSourceId);
    // Found again at each attempt, after its `start`: ids read before a write the attempt answers for would miss
    // what that write added.
    let candidates: Candidates | null = null;
    if (implied) {
      const cond = implied;
      candidates = await readCandidates(db, budget, (q) => findCandidates(q, db.dialect, dataSourceId, cond, indexed));
      if (!candidates) {
        implied = null;
        attempt--;
        continue;
      }
    }
    let kept: EntryRecord[] = [];
    let total = 0;
    /** With `distinct`: for each distinct row, the match that comes first in the query's order. */
    const firstOfRow = compiled.body.distinct ? new Map<string, EntryRecord>() : undefined;
    let after = 0;
    for (;;) {
      if (Date.now() > budget.deadline) throw queryTimeout(budget);
      const from = candidates;
      const page = await readCandidates(db, budget, (q) => scanPage(q, db.dialect, dataSourceId, after, SCAN_PAGE, from));
      if (!page) {
        // Never for plain pages (no SQL function reads the data); the caller's path then answers.
        if (!from) return null;
        // Data the SQL functions refuse ("\u0000" is not valid jsonb): every entry is a candidate, read again.
        implied = null;
        attempt--;
        continue attempts;
      }
      const { rows, done } = page;
      after = page.last;
      const entries = withGrant(
        rows.map((row) => entryFromRow(dataSourceId, row)),
        grant,
      );
      let matches = filterEntries(entries, compiled.where, budget);
      if (required) matches = matches.filter((entry) => meetsRequiredJoins(loaded, entry));
      if (firstOfRow) {
        keepFirstOfRows(firstOfRow, matches, compiled, row);
        if (firstOfRow.size > limits.distinctRows)
          throw new HttpError(
            422,
            'DISTINCT_TOO_LARGE',
            `distinct: more than ${limits.distinctRows} distinct rows match (limits.distinctRows); narrow the where, or leave columns out with attributes`,
            { limit: limits.distinctRows },
          );
        if (done) break;
        continue;
      }
      total += matches.length;
      if (total > capAt) throw tooManyRows(cap, compiled.body.aggregate ? 'aggregate' : 'select');
      kept = kept.concat(matches);
      if (reach > 0 && kept.length >= 2 * reach + SCAN_PAGE) kept = sortEntries(kept, compiled.order, reach);
      if (done) break;
    }
    if ((await dataVersion(db, dataSourceId)) === start)
      return compiled.body.aggregate
        ? aggregateSelect(
            kept,
            compiled,
            withDeadline({ bytes: limits.aggregateBytes, timeoutMs: limits.aggregateTimeoutMs, depth: limits.bodyDepth, rows: cap }, budget),
          )
        : firstOfRow
          ? joined
            ? joinedSelect([...firstOfRow.values()], compiled, loaded)
            : distinctSelect([...firstOfRow.values()], compiled)
          : joined
            ? joinedSelect(kept, compiled, loaded, total - kept.length)
            : plainSelect(kept, compiled, total);
  }
  return null;
}

/**
 * Reads candidates under what is left of the scan's time budget (422 QUERY_TIMEOUT past it); null when the data
 * made the database refuse the statement.
 */
export async function readCandidates<T>(db: Database, budget: Budget, read: (q: Queryable) => Promise<T>, field = 'where'): Promise<T | null> {
  try {
    // An unbounded budget (tests, internal reads) runs the statements as they are.
    if (budget.deadline === Infinity) return await read(db);
    return await withTimeBudget(db, Math.max(1, budget.deadline - Date.now()), read);
  } catch (error) {
    if (error instanceof HttpError && error.code === 'QUERY_TIMEOUT') throw queryTimeout(budget, field);
    if (isDataError(error)) return null;
    throw error;
  }
}

/** The Cond implied by a checked `where` that picks a scan's candidates, or null (every entry), also when it reads a column the grant hides. */
export function candidatesCond(where: unknown, grant: Grant): Cond | null {
  const cond = impliedWhere(where);
  if (!cond || (hasColumnFilter(grant) && ![...columnsOf(cond)].every((column) => visible(grant, column)))) return null;
  return cond;
}

/**
 * Keeps, for each row `matches` shape to (`row`: `attributes`, and with joins their values; null: the entry), the
 * match that comes first in the query's (total) order. Dropping the later matches of a row changes no first
 * occurrence, so the distinct rows (and, with joins, the entries they append) come out as from every match.
 */
function keepFirstOfRows(
  firstOfRow: Map<string, EntryRecord>,
  matches: readonly EntryRecord[],
  compiled: CompiledQuery,
  row: ((entry: EntryRecord) => unknown) | null,
): void {
  for (const entry of matches) {
    const key = canonicalKey(row === null ? entry : row(entry));
    const earlier = firstOfRow.get(key);
    if (!earlier || sortEntries([earlier, entry], compiled.order, 0)[0] === entry) firstOfRow.set(key, entry);
  }
}
