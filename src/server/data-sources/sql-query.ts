import { checkFilterFields } from '../http/nesting.js';
import { authorize, filterColumns, hasColumnFilter, type Caller, type Grant } from './access.js';
import { resolveDataSource, type Core, type DataSourceRef } from './core.js';
import { HttpError } from '../http/errors.js';
import type { DataSourceRecord } from './types.js';
import { compileQuery, type CompiledQuery } from './query/compile.js';
import { isPlainObject } from './query/errors.js';
import type { EntryRecord, QueryResult } from './query/types.js';
import { indexedPaths } from './indexes.js';
import { runSqlAggregate } from './sql/aggregate.js';
import { indexedGroupPath } from './sql/aggregate-indexed.js';
import { planSqlAggregate, type SqlAggregatePlan } from './sql/aggregate-plan.js';
import { joinedColumns, type SqlJoinPlan } from './sql/joins.js';
import { planSqlSelect, runSqlSelect, type SqlSelectResult } from './sql/select.js';
import { withTimeBudget } from './sql/time-budget.js';
import { mayExceed, tooManyRows } from './query/answer-rows.js';

/**
 * `POST …/data/query` selects run by the database (src/server/data-sources/sql/, docs/sql.md) when their
 * translation is exact; null means "run it on the JS evaluator" (queryEntries), which then answers every
 * error exactly as before. Checks run in queryEntries' order (data source, nesting, body), so a refusal is
 * the same on both paths. Only the page is read, not the whole data source. The statements run under the time
 * budget limits.aggregateTimeoutMs (sql/time-budget.ts): past it 422 QUERY_TIMEOUT, not the JS evaluator.
 */

/** Shapes that can never be translated, told apart before any database access. */
function mayTranslate(input: unknown): input is Record<string, unknown> {
  if (!isPlainObject(input)) return false;
  const absent = (key: string) => input[key] === undefined || input[key] === null;
  if (!absent('aggregate')) return (absent('type') || input.type === 'select') && absent('join') && Array.isArray(input.aggregate);
  return absent('type') || input.type === 'select';
}

/** Whether the grant shows `column`. */
export const visible = (grant: Grant, column: string) =>
  (!grant.include || grant.include.includes(column)) && (!grant.exclude || !grant.exclude.includes(column));

export async function querySelectWithSql(core: Core, caller: Caller, ref: DataSourceRef, input: unknown): Promise<QueryResult | null> {
  if (!mayTranslate(input)) return null;
  const { ctx } = core;
  const ds = await resolveDataSource(ctx.db, ref, caller);
  checkFilterFields(input, ctx.limits.filterDepth, ['where', 'aggregate', 'join']);
  const compiled = compileQuery(input);
  if (compiled.body.aggregate) return aggregateWithSql(core, caller, ds, compiled);
  const plan = planSqlSelect(compiled);
  if (!plan) return null;
  const grant = authorize(ds, 'select', caller);
  // A column the rule hides is missing for the JS evaluator's `where`: only that path gives that answer.
  if (hasColumnFilter(grant) && ![...plan.columns].every((column) => visible(grant, column))) return null;
  const joins = await resolveJoins(core, caller, ds, plan.joins);
  if (!joins) return null;
  // A select that may answer with more than limits.queryRows entries reads one more than that: past it, 422.
  const cap = ctx.limits.queryRows;
  const capped = mayExceed(compiled.body.limit, cap);
  const resolved = { ...plan, joins, cap: capped ? cap + 1 : undefined };
  const indexed = await indexedPaths(ctx.db, ds.id);
  let result: SqlSelectResult | null;
  try {
    result = await withTimeBudget(ctx.db, ctx.limits.aggregateTimeoutMs, (q) => runSqlSelect(q, ctx.db.dialect, ds.id, resolved, indexed));
  } catch (error) {
    // The time budget's refusal stands; data the SQL functions refuse (e.g. "\u0000" in a string is not valid
    // jsonb) goes to the JS evaluator.
    if (error instanceof HttpError) throw error;
    return null;
  }
  core.autoIndexes.note(ds.id, plan.indexable, indexed);
  // An order on a data column some matching value of which SQL does not order as JS does (sql/keys.ts).
  if (!result) return null;
  if (capped && result.entries.length > cap) throw tooManyRows(cap);
  let entries: unknown[] = hasColumnFilter(grant) ? result.entries.map((e) => ({ ...e, data: filterColumns(e.data, grant) })) : result.entries;
  if (compiled.projection) entries = entries.map((e) => compiled.projection!(e as EntryRecord));
  // As query/run.ts's joinedRow: the entry (or its attributes), then `joins`.
  if (result.joins) entries = entries.map((e, i) => ({ ...(e as Record<string, unknown>), joins: result.joins![i] }));
  const body = compiled.body;
  if (!body.includePagination) return { entries };
  return { entries, pagination: { total: result.total ?? 0, limit: body.limit ?? 0, offset: body.offset ?? 0 } };
}

/**
 * The joins' data sources, resolved as bulk-ops.ts's joinLoader resolves them (same organization, `select`
 * allowed), or null when one is not readable (the JS evaluator then answers with its error) or its rule hides a
 * column the join reads (the JS evaluator sees it missing).
 */
async function resolveJoins(core: Core, caller: Caller, parent: DataSourceRecord, joins: readonly SqlJoinPlan[]): Promise<SqlJoinPlan[] | null> {
  const resolved: SqlJoinPlan[] = [];
  for (const join of joins) {
    const { ref } = join;
    const target = ref.dataSourceId !== undefined ? { id: ref.dataSourceId } : { name: String(ref.dataSourceName), organizationId: parent.organizationId };
    let ds: DataSourceRecord;
    let grant: Grant;
    try {
      ds = await resolveDataSource(core.ctx.db, target, caller);
      if (ds.organizationId !== parent.organizationId) return null;
      grant = authorize(ds, 'select', caller);
    } catch (error) {
      if (error instanceof HttpError) return null;
      throw error;
    }
    if (hasColumnFilter(grant) && ![...joinedColumns(join)].every((column) => visible(grant, column))) return null;
    resolved.push({ ...join, dataSourceId: ds.id });
  }
  return resolved;
}

/**
 * An `aggregate` the database groups (sql/aggregate-plan.ts, docs/sql.md "Aggregations"), under the JS path's
 * budget (limits.aggregateBytes); null when the plan or its answer is not exact (the JS evaluator runs it).
 */
async function aggregateWithSql(core: Core, caller: Caller, ds: DataSourceRecord, compiled: CompiledQuery): Promise<QueryResult | null> {
  const plan = planSqlAggregate(compiled);
  if (!plan) return null;
  const grant = authorize(ds, 'select', caller);
  if (hasColumnFilter(grant) && ![...plan.columns].every((column) => visible(grant, column))) return null;
  const { ctx } = core;
  // The stages after `$group` (run by mingo) have what is left of the statement's budget, not a fresh one.
  const timeoutMs = ctx.limits.aggregateTimeoutMs;
  const limits = { bytes: ctx.limits.aggregateBytes, timeoutMs, depth: ctx.limits.bodyDepth, deadline: Date.now() + timeoutMs };
  const indexed = await indexedPaths(ctx.db, ds.id);
  let entries: unknown[] | null;
  try {
    entries = await withTimeBudget(ctx.db, limits.timeoutMs, (q) => runSqlAggregate(q, ctx.db.dialect, ds.id, plan, limits, indexed));
  } catch (error) {
    // The budgets' refusals stand (memory, and time: sql/time-budget.ts); data the SQL functions refuse (or an integer overflow) goes to the JS evaluator.
    if (error instanceof HttpError) {
      // A group that ran out of time read (most of) the data source too: it counts, so the index can come.
      if (error.code === 'QUERY_TIMEOUT') noteGroup(core, ds.id, plan, indexed);
      throw error;
    }
    return null;
  }
  noteGroup(core, ds.id, plan, indexed);
  return entries && { entries };
}

/**
 * SQLite: a grouped path counts toward an automatic index; a group its index would serve alone (counting over every
 * entry, aggregate-indexed.ts) by the entries the statement read: every entry of the data source.
 */
function noteGroup(core: Core, dataSourceId: number, plan: SqlAggregatePlan, indexed: ReadonlySet<string>): void {
  if (core.ctx.db.dialect !== 'sqlite' || plan.key.kind !== 'path') return;
  const path = plan.key.segments.join('.');
  if (indexedGroupPath('sqlite', plan, new Set([path]))) core.autoIndexes.noteScan(dataSourceId, path, indexed);
  else core.autoIndexes.note(dataSourceId, new Set([path]), indexed);
}
