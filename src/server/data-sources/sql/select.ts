import type { Queryable } from '../../db/database.js';
import type { CompiledQuery } from '../query/compile.js';
import type { EntryRecord } from '../query/types.js';
import { columnsOf, type Cond } from './conditions.js';
import { renderCond, type SqlDialect } from './dialect.js';
import { joinSql, raw, sql, type Sql } from './fragment.js';
import { setOwn } from '../query/values.js';
import { orderTerms, translateOrder, type SqlOrderTerm } from './order.js';
import { postgresDialect } from './postgres.js';
import { distinctColumns, distinctKeys, distinctStatement, type DistinctKey } from './distinct.js';
import { descKey, indexablePaths, indexName, pathKey, pinsKey, prefilterIsExact, prefilterOf, seekPath } from './prefilter.js';
import { sqliteDialect } from './sqlite.js';
import { type Access, chooseAccess, CREATED_INDEX, SEEK } from './walk.js';
import { ambiguousKey, joinParts, joinsSize, MAX_JOINS, planJoin, keySql, type SqlJoinPlan } from './joins.js';
import { MAX_SIZE, translateWhere } from './where.js';
import { sizeOf } from './conditions.js';

/** A select the database can run with exactly the JS evaluator's answer. */
export interface SqlSelectPlan {
  where: Cond;
  order: SqlOrderTerm[];
  limit: number;
  offset: number;
  count: boolean;
  /**
   * The most rows the page may read when the plan has no `limit` or a larger one (limits.queryRows + 1: one past
   * the cap tells the caller it was passed). It only bounds the page's LIMIT: access paths and counts are chosen by
   * `limit`, as without it.
   */
  cap?: number;
  /** Top-level data columns the query reads (access rules may hide some: then the plan is not used). */
  columns: Set<string>;
  /** Data paths an index could serve: tested by `where` (not `$exists`), or the first order key. */
  indexable: Set<string>;
  /** Joins with `on` whose value is `has`, `count` or `sum` (joins.ts); none else translate. */
  joins: SqlJoinPlan[];
  /** With `distinct` (and attributes that can make rows equal): what tells the rows apart (distinct.ts). */
  distinct?: DistinctKey[];
}

/**
 * The plan of a compiled select, or null when some part needs the JS evaluator: `aggregate`, a join joins.ts
 * does not take, `distinct` with attributes distinct.ts refuses or with joins, a `where` or `order` the
 * translation refuses (where.ts, order.ts). `attributes` are applied to the returned page by the caller.
 */
export function planSqlSelect(compiled: CompiledQuery): SqlSelectPlan | null {
  const { body } = compiled;
  if (body.type !== 'select' || body.aggregate || compiled.joins.length > MAX_JOINS) return null;
  // Rows compared with their `joins.<Name>` values (query/distinct.ts): not translated.
  if (body.distinct && compiled.joins.length > 0) return null;
  const distinct = body.distinct ? distinctKeys(body.attributes) : 'unique';
  if (distinct === null) return null;
  const where = translateWhere(body.where);
  if (!where) return null;
  const joins: SqlJoinPlan[] = [];
  for (const join of compiled.joins) {
    const planned = planJoin(join, (body.join as Record<string, unknown>)[join.name]);
    if (!planned) return null;
    joins.push(planned);
  }
  if (sizeOf(where) + joinsSize(joins) > MAX_SIZE) return null;
  const order = translateOrder(compiled.order);
  if (!order) return null;
  const columns = columnsOf(where);
  for (const join of joins) for (const column of join.parent) if (column.kind === 'data') columns.add(column.name);
  const indexable = indexablePaths(where, new Set());
  for (const term of order) if (term.kind === 'path') columns.add(term.segments[0]!);
  // An order DESC counts toward the path's descending index (its ascending one, walked backward, sorts ties).
  if (order[0]?.kind === 'path') indexable.add(order[0].desc ? descKey(pathKey(order[0].segments)) : pathKey(order[0].segments));
  const plan: SqlSelectPlan = {
    where,
    order,
    limit: body.limit ?? 0,
    offset: body.offset ?? 0,
    count: body.includePagination === true,
    columns,
    indexable,
    joins,
  };
  // Every row differs when `distinct` keeps them all (no attributes, or `id` among them): the plain plan.
  if (distinct === 'unique') return plan;
  // The keys read their columns: one an access rule hides is missing for the JS evaluator.
  for (const column of distinctColumns(distinct)) columns.add(column);
  // Every match is read and ordered by the window: an index of the order's path would not serve it.
  return { ...plan, indexable: indexablePaths(where, new Set()), distinct };
}

export const dialectOf = (engine: 'sqlite' | 'postgres'): SqlDialect => (engine === 'postgres' ? postgresDialect : sqliteDialect);

interface Row {
  amb?: number | boolean;
  odd?: number | boolean;
  ambw?: number | boolean;
  jamb?: number | boolean;
  id: number | null;
  data: string | null;
  sort_order: number;
  created_at: string;
  updated_at: string;
  total?: number;
  [joinValue: `jv${number}`]: unknown;
}

/**
 * Runs a plan over one data source: the page of entries (parsed) and, with `count`, the number of matches
 * before offset/limit (with `distinct`: the first match of each row, and the number of rows; distinct.ts), both
 * read by one statement (one snapshot). `indexed`: data paths with an expression
 * index on this data source (indexes.ts); their tests then also get keys.ts's index form. null when the
 * order is on a data column and some matching row has a value SQL does not order as JS does (keys.ts's
 * rank 3), or, with `distinct`, some matching row has a value its keys do not compare as canonicalKey does:
 * the caller then runs the JS evaluator. When a matching row has rank 3 on an indexed path the
 * index form left out, the plan runs again without it. A page in `createdAt` order may walk that order
 * (walk.ts); a bounded walk that found fewer than the page's rows gives way to the seek. `forced` (tests):
 * that access instead of walk.ts's choice, its page returned as it comes (a bounded walk's may be short).
 */
export async function runSqlSelect(
  db: Queryable,
  engine: 'sqlite' | 'postgres',
  dataSourceId: number,
  plan: SqlSelectPlan,
  indexed: ReadonlySet<string> = new Set(),
  forced?: Access,
): Promise<SqlSelectResult | null> {
  // A distinct select reads every match (the first of each row): no access path stops early.
  const access = plan.distinct ? SEEK : (forced ?? (await chooseAccess(db, dialectOf(engine), dataSourceId, plan, indexed)));
  const run = (how: Access) => {
    const statement = selectStatement(engine, dataSourceId, plan, indexed, how);
    return db.all<Row>(statement.text, statement.params);
  };
  let rows = await run(access);
  if (!forced && access.kind === 'walk' && access.bound !== null && rows.filter((row) => row.id !== null).length < rowLimit(plan)) rows = await run(SEEK);
  const yes = (flag: unknown) => flag === true || flag === 1;
  // A matching parent or joined entry whose join key SQL does not read as JS does (joins.ts).
  if (yes(rows[0]?.jamb)) return null;
  // An ambiguous order value, or (distinct) a value the keys do not tell apart as canonicalKey does.
  if (yes(rows[0]?.amb) || yes(rows[0]?.odd)) return null;
  if (yes(rows[0]?.ambw)) return runSqlSelect(db, engine, dataSourceId, plan, new Set(), forced);
  const entries: EntryRecord[] = [];
  const joins: Record<string, unknown>[] = [];
  for (const row of rows) {
    if (row.id === null || row.data === null) continue;
    if (plan.joins.length > 0) {
      const values: Record<string, unknown> = {};
      plan.joins.forEach((join, i) => setOwn(values, join.name, join.mode === 'has' ? yes(row[`jv${i}`]) : Number(row[`jv${i}`])));
      joins.push(values);
    }
    entries.push({
      id: row.id,
      dataSourceId,
      data: JSON.parse(row.data) as Record<string, unknown>,
      order: row.sort_order,
      createdAt: row.created_at,
      updatedAt: row.updated_at,
    });
  }
  const result: SqlSelectResult = plan.joins.length > 0 ? { entries, joins } : { entries };
  if (plan.count) result.total = Number(rows[0]?.total ?? 0);
  return result;
}

/** The rows the page's LIMIT reads (0: no LIMIT): `limit`, bounded by `cap`. */
export const rowLimit = (plan: Pick<SqlSelectPlan, 'limit' | 'cap'>): number =>
  plan.cap === undefined ? Math.max(plan.limit, 0) : plan.limit > 0 ? Math.min(plan.limit, plan.cap) : plan.cap;

/** A page read by runSqlSelect: its entries, with joins each one's `joins.<Name>` values, and with `count` the total. */
export interface SqlSelectResult {
  entries: EntryRecord[];
  joins?: Record<string, unknown>[];
  total?: number;
}

/**
 * runSqlSelect's one statement (exported for EXPLAIN in tests and benchmarks). `access`: `seek` (default)
 * goes through the expression index of the first order key, else of a tested path; `walk` goes through the
 * `createdAt` index in the page's order (walk.ts), over entries up to `bound` when it has one. A distinct plan
 * reads every match, through a tested path's index when it has one (distinct.ts), whatever `access` says.
 */
export function selectStatement(
  engine: 'sqlite' | 'postgres',
  dataSourceId: number,
  plan: SqlSelectPlan,
  indexed: ReadonlySet<string> = new Set(),
  access: Access = SEEK,
): Sql {
  const dialect = dialectOf(engine);
  const keyOf = (segments: readonly string[]) => dialect.sortKey(segments, 'e.data', 'e.doc');
  /** The index of a path: its ascending one, else its descending one (the same keys: it serves the same tests, found by review). */
  const indexOf = (segments: readonly string[]) => {
    const key = pathKey(segments);
    return indexed.has(key) ? indexName(dataSourceId, key) : indexed.has(descKey(key)) ? indexName(dataSourceId, descKey(key)) : null;
  };
  const exact = renderCond(dialect, plan.where);
  const joins = plan.joins.length > 0 ? joinParts(dialect, plan.joins) : null;
  /** Parent entries with their joined tables (`requiredOnly`: those of required joins, for the count). */
  const joinedFrom = (from: Sql, requiredOnly: boolean) => (joins ? sql`${from}${joins.from(requiredOnly)}` : from);
  const joinedWhere = (where: Sql) => (joins ? sql`${where} AND ${joins.required}` : where);
  // Paths whose index form is used: their rank 3 entries are probed (below).
  const prefiltered = new Map<string, string[]>();
  /**
   * The entries through the index of `segments` (none: the table; `desc`: its descending index), filtered by
   * `where` (+ its index form); `paged`: read in the page's order, up to its LIMIT.
   */
  const through = (segments: readonly string[] | undefined, counting: boolean, desc = false, paged = false): { from: Sql; where: Sql } => {
    const prefilter = segments ? prefilterOf(plan.where, new Set([pathKey(segments)]), keyOf, prefiltered) : null;
    const from = dialect.entries(dataSourceId, segments ? (desc ? indexName(dataSourceId, descKey(pathKey(segments))) : indexOf(segments)) : null, paged);
    // A count needs no exact check where the index form is exact (rank 3 entries are probed below).
    if (prefilter && counting && prefilterIsExact(plan.where, pathKey(segments!))) return { from, where: prefilter };
    return { from, where: prefilter ? sql`${prefilter} AND ${exact}` : exact };
  };
  // Rank 3 rows matching the exact condition, one probe per path (each through its index when it has one).
  const anyRank3 = (paths: readonly (readonly string[])[]): Sql =>
    paths.length === 0
      ? raw('FALSE')
      : sql`(${joinSql(
          paths.map(
            (segments) => sql`EXISTS (SELECT 1 FROM ${dialect.entries(dataSourceId, indexOf(segments))} WHERE ${raw(keyOf(segments).rank)} = 3 AND ${exact})`,
          ),
          ' OR ',
        )})`;
  const tested = seekPath(plan.where, indexed, keyOf);
  if (plan.distinct) {
    // Every match is read (the first of each row may be anywhere): through a tested path's index, if any.
    const matches = through(tested, false);
    return distinctStatement(dialect, matches, plan.order, plan.distinct, { ...plan, limit: rowLimit(plan) }, { ambw: anyRank3([...prefiltered.values()]) });
  }
  let page: { from: Sql; where: Sql };
  let pinned: string[] = [];
  if (access.kind === 'walk') {
    const desc = plan.order[0]?.desc === true;
    const bound = access.bound === null ? null : dialect.column('created_at', { kind: 'cmp', op: desc ? '>=' : '<=', value: access.bound });
    page = { from: dialect.entries(dataSourceId, CREATED_INDEX), where: bound ? sql`${bound} AND ${exact}` : exact };
  } else {
    // The first order key's index (the page then stops early), else a tested path's. Only its path gets the
    // index form (the keys of other paths would only be computed row by row).
    const first = plan.order[0];
    // DESC on a path with a descending index: that index, walked forward in the page's order (ties included).
    const desc = first?.kind === 'path' && first.desc && indexed.has(descKey(pathKey(first.segments)));
    const via = first?.kind === 'path' && (desc || indexed.has(pathKey(first.segments))) ? first.segments : tested;
    // An order on entry columns only can be read from their index, stopping at the LIMIT; an order on a data
    // path (not through its index) sorts the matches, and the fenced form filters them before the sort keys.
    page = through(
      via,
      false,
      desc,
      // Without a LIMIT every match is read: the fenced form is cheaper per row (found by review).
      plan.limit > 0 && plan.order.every((term) => term.kind !== 'path'),
    );
    // PostgreSQL only: SQLite already knows the equality-bound key columns and would no longer match the
    // ORDER BY to the index (it sorted all 125,000 matches at 1M).
    if (dialect.name === 'postgres' && via && via === tested && pinsKey(plan.where, pathKey(via))) {
      const key = keyOf(via);
      pinned = [key.rank, key.num, key.txt];
    }
  }
  const terms = orderTerms(dialect, plan.order, 'e');
  const limit = rowLimit(plan) || -1;
  const columns = ['e.id', 'e.data', 'e.sort_order', 'e.created_at', 'e.updated_at', ...terms.select, ...(joins?.values ?? [])].join(', ');
  const pageSql = sql`SELECT ${raw(columns)} FROM ${joinedFrom(page.from, false)} WHERE ${joinedWhere(page.where)} ORDER BY ${raw([...pinned, terms.orderBy].join(', '))} LIMIT ${raw(String(limit))} OFFSET ${plan.offset}`;
  const count = plan.count ? through(tested, true) : null;
  const orderPaths = plan.order.flatMap((term) => (term.kind === 'path' ? [term.segments] : []));
  const heads: Sql[] = [];
  const headColumns: string[] = [];
  if (orderPaths.length > 0 || prefiltered.size > 0) {
    heads.push(sql`(SELECT ${anyRank3(orderPaths)} AS amb, ${anyRank3([...prefiltered.values()])} AS ambw) g`);
    headColumns.push('g.amb', 'g.ambw');
  }
  if (joins) {
    // Ambiguous join keys: of a joined match (joins.ts), or of a parent matching the `where`.
    const parentKeys = joinSql(
      plan.joins.map((join) => ambiguousKey(dialect, join.parent, keySql(dialect, join.parent))),
      ' OR ',
    );
    heads.push(sql`(SELECT (${joins.ambiguous} OR EXISTS (SELECT 1 FROM ${dialect.entries(dataSourceId)} WHERE ${exact} AND (${parentKeys}))) AS jamb) jg`);
    headColumns.push('jg.jamb');
  }
  const values = plan.joins.map((_, i) => `p.jv${i}`);
  const pageColumns = ['p.id', 'p.data', 'p.sort_order', 'p.created_at', 'p.updated_at', ...values];
  const byOrder = raw(orderTerms(dialect, plan.order, 'p').orderBy);
  const ctes = joins ? [joins.tables] : [];
  let statement: Sql;
  if (count && shortCounted(plan, access)) {
    // The page first (a CTE): a page shorter than its LIMIT has seen every match past the offset, so the total
    // is the offset plus its rows, and the count's own read of every match runs only for a full page (or an
    // empty one past an offset). A match that is rare costs one read of the data source, not two.
    const full = sql`(SELECT COUNT(*) FROM ${joinedFrom(count.from, true)} WHERE ${joinedWhere(count.where)})`;
    const [limitText, offsetText] = [String(rowLimit(plan)), String(plan.offset)];
    const total = sql`CASE WHEN (SELECT COUNT(*) FROM p) < ${raw(limitText)} AND (${raw(offsetText)} = 0 OR EXISTS (SELECT 1 FROM p)) THEN ${raw(offsetText)} + (SELECT COUNT(*) FROM p) ELSE ${full} END`;
    heads.push(sql`(SELECT ${total} AS total) c`);
    headColumns.push('c.total');
    ctes.push(sql`p AS MATERIALIZED (${pageSql})`);
    statement = sql`SELECT ${raw([...headColumns, ...pageColumns].join(', '))} FROM ${joinSql(heads, ' CROSS JOIN ')} LEFT JOIN p ON 1 = 1 ORDER BY ${byOrder}`;
  } else {
    if (count) {
      heads.push(sql`(SELECT COUNT(*) AS total FROM ${joinedFrom(count.from, true)} WHERE ${joinedWhere(count.where)}) c`);
      headColumns.push('c.total');
    }
    statement =
      heads.length > 0
        ? sql`SELECT ${raw([...headColumns, ...pageColumns].join(', '))} FROM ${joinSql(heads, ' CROSS JOIN ')} LEFT JOIN (${pageSql}) p ON 1 = 1 ORDER BY ${byOrder}`
        : pageSql;
  }
  return ctes.length > 0 ? sql`WITH ${joinSql(ctes, ', ')} ${statement}` : statement;
}

/**
 * Whether a counted page can give its count when it is short: it has a LIMIT, and it is not a walk bounded short of
 * the end (walk.ts: such a page may be short without having seen every match). Offset and limit are integers.
 */
function shortCounted(plan: SqlSelectPlan, access: Access): boolean {
  if (plan.limit <= 0 || !Number.isSafeInteger(plan.limit) || !Number.isSafeInteger(plan.offset) || plan.offset < 0) return false;
  return !(access.kind === 'walk' && access.bound !== null);
}
