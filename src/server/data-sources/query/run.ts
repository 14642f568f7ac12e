import { runAggregate } from './aggregate.js';
import { tooManyRows } from './answer-rows.js';
import type { AggregateLimits } from './budget.js';
import { compileQuery, type CompiledQuery } from './compile.js';
import { distinctRows } from './distinct.js';
import { filterEntries, type Budget, startBudget } from './filter-entries.js';
import { joinValue, loadJoin, type LoadedJoin } from './joins.js';
import { sortEntries } from './order.js';
import type { EntryRecord, JoinLoader, QueryBody, QueryResult } from './types.js';
import { setOwn } from './values.js';
import { compileWhere } from './where.js';

/** How many of the first matches in the query's order its page can hold: offset + limit (0: all of them). */
export const pageReach = (compiled: CompiledQuery) => ((compiled.body.limit ?? 0) > 0 ? (compiled.body.offset ?? 0) + compiled.body.limit! : 0);

/** The page of `matches` selected by the query's order, offset and limit. */
function page(matches: EntryRecord[], compiled: CompiledQuery): EntryRecord[] {
  const offset = compiled.body.offset ?? 0;
  const limit = compiled.body.limit ?? 0;
  const sorted = sortEntries(matches, compiled.order, pageReach(compiled));
  return offset > 0 || limit > 0 ? sorted.slice(offset, limit > 0 ? offset + limit : undefined) : sorted;
}

/**
 * The answer of a select without joins, `distinct` or `aggregate` from its matches: every match, or at least the
 * first pageReach of them in the query's order (scan-select.ts keeps only those), and `total` of them in all.
 */
export function plainSelect(matches: EntryRecord[], compiled: CompiledQuery, total = matches.length): QueryResult {
  const selected = page(matches, compiled);
  const projection = compiled.projection;
  const entries = projection === null ? selected : selected.map((entry) => projection(entry));
  if (!compiled.body.includePagination) return { entries };
  return { entries, pagination: { total, limit: compiled.body.limit ?? 0, offset: compiled.body.offset ?? 0 } };
}

/**
 * The answer of a select with `aggregate` (joins are not applied to it) from its matches: every match, or at least
 * the first pageReach of them in the query's order. The pipeline runs over the page of matches.
 */
export function aggregateSelect(matches: EntryRecord[], compiled: CompiledQuery, aggregateLimits?: AggregateLimits): QueryResult {
  const input = page(matches, compiled);
  const rows = aggregateLimits?.rows;
  if (rows !== undefined && input.length > rows) throw tooManyRows(rows, 'aggregate');
  return { entries: runAggregate(input, compiled.body.aggregate, 'aggregate', aggregateLimits) };
}

/**
 * The answer of a select with `distinct` and no joins or `aggregate`, from matches holding at least, for each
 * distinct row, the match that comes first in the query's order (scan-select.ts keeps only those): the same rows,
 * count and page as runQuery gives from every match, since equal rows keep the first of them.
 */
export function distinctSelect(matches: EntryRecord[], compiled: CompiledQuery): QueryResult {
  const projection = compiled.projection;
  const sorted = sortEntries(matches, compiled.order, 0);
  const rows = distinctRows<unknown>(projection === null ? sorted : sorted.map((entry) => projection(entry)));
  const offset = compiled.body.offset ?? 0;
  const limit = compiled.body.limit ?? 0;
  const entries = rows.slice(offset, limit > 0 ? offset + limit : undefined);
  if (!compiled.body.includePagination) return { entries };
  return { entries, pagination: { total: rows.length, limit, offset } };
}

/**
 * Runs a select query over `entries` (the data source's live entries): `where` → joins without `on`
 * appended → `required` joins → `order` → `offset`/`limit` → `joins.<Name>` values → `attributes`.
 * With `aggregate`, the page of entries matching `where` goes through the pipeline instead.
 * `pagination.total` counts before offset/limit; `pagination.limit` is the requested limit (0 = none).
 * A body with `type: 'delete'` is run as a select of the same `where` (use matchingIds to delete).
 * `aggregateLimits` is the aggregate's memory and time budget (budget.ts; default DEFAULT_AGGREGATE_LIMITS).
 */
export async function runQuery(
  entries: readonly EntryRecord[],
  body: QueryBody,
  joins: JoinLoader,
  aggregateLimits?: AggregateLimits,
  budget: Budget = startBudget(aggregateLimits?.timeoutMs),
): Promise<QueryResult> {
  const compiled = compileQuery(body);
  // One budget for the whole query (`budget`): its `where`, then its joins' reads and `where`s.
  const matches = filterEntries(entries, compiled.where, budget);

  // The aggregate ends the query: it has what is left of the query's budget, not a fresh one.
  if (compiled.body.aggregate) return aggregateSelect(matches, compiled, aggregateLimits && withDeadline(aggregateLimits, budget));

  if (compiled.joins.length === 0) return compiled.body.distinct ? distinctSelect(matches, compiled) : plainSelect(matches, compiled);
  return joinedSelect(matches, compiled, await loadJoins(compiled, joins, budget));
}

/** `limits` ending at the query's deadline (budget.ts `AggregateLimits.deadline`), when it has one. */
export const withDeadline = (limits: AggregateLimits, budget: Budget): AggregateLimits =>
  Number.isFinite(budget.deadline) ? { ...limits, deadline: budget.deadline, databaseMs: budget.databaseMs } : limits;

/** The query's joins, each loaded (its data source read) and indexed by its key, under the query's budget. */
export async function loadJoins(compiled: CompiledQuery, joins: JoinLoader, budget: Budget = startBudget()): Promise<LoadedJoin[]> {
  const loaded: LoadedJoin[] = [];
  for (const join of compiled.joins) loaded.push(await loadJoin(join, joins, budget));
  return loaded;
}

/** Whether `entry` has a match in every `required` join (those without are left out of the answer). */
export const meetsRequiredJoins = (loaded: readonly LoadedJoin[], entry: EntryRecord): boolean =>
  loaded.every((join) => !join.join.required || join.matchesOf(entry).length > 0);

/**
 * An entry as a select with joins returns it: `attributes` applied, `joins.<Name>` added (null: the entry itself,
 * when there are neither). Distinct rows are compared in this shape.
 */
export function joinedRow(compiled: CompiledQuery, loaded: readonly LoadedJoin[]): ((entry: EntryRecord) => unknown) | null {
  const withJoins = loaded.filter((join) => join.join.on !== null);
  const projection = compiled.projection;
  if (projection === null && withJoins.length === 0) return null;
  return (entry) => {
    const result: Record<string, unknown> = projection ? projection(entry) : { ...entry };
    if (withJoins.length > 0) {
      const values: Record<string, unknown> = {};
      for (const join of withJoins) setOwn(values, join.join.name, joinValue(join, join.matchesOf(entry)));
      result.joins = values;
    }
    return result;
  };
}

/**
 * The answer of a select with joins from the entries its `where` matched: the entries of joins without `on`
 * appended, `required` joins applied, then ordered, paged (or made distinct) and shaped with `joins.<Name>`.
 * `uncounted`: matches left out of `matches` that still count in `pagination.total` (scan-select.ts keeps only the
 * first pageReach of the parents that meet the required joins, and counts the rest); 0 with `distinct`.
 */
export function joinedSelect(matches: EntryRecord[], compiled: CompiledQuery, loaded: readonly LoadedJoin[], uncounted = 0): QueryResult {
  for (const join of loaded) if (join.appended.length > 0) matches = matches.concat(join.appended);
  if (loaded.some((join) => join.join.required)) matches = matches.filter((entry) => meetsRequiredJoins(loaded, entry));

  const row = joinedRow(compiled, loaded);
  const shape = (selected: EntryRecord[]): unknown[] => (row === null ? selected : selected.map(row));

  let total = matches.length + uncounted;
  let out: unknown[];
  if (compiled.body.distinct) {
    // Rows are compared as returned: every match is ordered and shaped, then offset/limit page the distinct rows.
    const rows = distinctRows(shape(sortEntries(matches, compiled.order, 0)));
    total = rows.length;
    const offset = compiled.body.offset ?? 0;
    const limit = compiled.body.limit ?? 0;
    out = rows.slice(offset, limit > 0 ? offset + limit : undefined);
  } else out = shape(page(matches, compiled));

  if (!compiled.body.includePagination) return { entries: out };
  return { entries: out, pagination: { total, limit: compiled.body.limit ?? 0, offset: compiled.body.offset ?? 0 } };
}

/** Ids of the entries matching the body's `where` (for `type: 'delete'`, answered as `{ deletedCount }`). */
export function matchingIds(entries: readonly EntryRecord[], body: QueryBody | { where?: unknown }): number[] {
  const test = compileWhere((body as { where?: unknown }).where, 'where');
  const ids: number[] = [];
  for (const entry of filterEntries(entries, test)) ids.push(entry.id);
  return ids;
}
