import type { Queryable } from '../../db/database.js';
import type { CompiledQuery } from '../query/compile.js';
import type { EntryRecord } from '../query/types.js';
import { columnsOf, type Cond } from './conditions.js';
import { renderCond, type SqlDialect } from './dialect.js';
import { joinSql, raw, sql, type Sql } from './fragment.js';
import { translateOrder, type SqlOrderTerm } from './order.js';
import { postgresDialect } from './postgres.js';
import { indexablePaths, indexName, pathKey, prefilterOf } from './prefilter.js';
import { sqliteDialect } from './sqlite.js';
import { translateWhere } from './where.js';

/** A select the database can run with exactly the JS evaluator's answer. */
export interface SqlSelectPlan {
  where: Cond;
  order: SqlOrderTerm[];
  limit: number;
  offset: number;
  count: boolean;
  /** Top-level data columns the query reads (access rules may hide some: then the plan is not used). */
  columns: Set<string>;
  /** Data paths an index could serve: tested by `where` (not `$exists`), or the first order key. */
  indexable: Set<string>;
}

/**
 * The plan of a compiled select, or null when some part needs the JS evaluator: `join`, `aggregate`,
 * `distinct`, a `where` or `order` the translation refuses (where.ts, order.ts). `attributes` are applied
 * to the returned page by the caller.
 */
export function planSqlSelect(compiled: CompiledQuery): SqlSelectPlan | null {
  const { body } = compiled;
  if (body.type !== 'select' || body.aggregate || body.distinct || compiled.joins.length > 0) return null;
  const where = translateWhere(body.where);
  if (!where) return null;
  const order = translateOrder(compiled.order);
  if (!order) return null;
  const columns = columnsOf(where);
  const indexable = indexablePaths(where, new Set());
  for (const term of order) if (term.kind === 'path') columns.add(term.segments[0]!);
  if (order[0]?.kind === 'path') indexable.add(pathKey(order[0].segments));
  return { where, order, limit: body.limit ?? 0, offset: body.offset ?? 0, count: body.includePagination === true, columns, indexable };
}

export const dialectOf = (engine: 'sqlite' | 'postgres'): SqlDialect => (engine === 'postgres' ? postgresDialect : sqliteDialect);

interface Row {
  amb?: number | boolean;
  ambw?: number | boolean;
  id: number | null;
  data: string | null;
  sort_order: number;
  created_at: string;
  updated_at: string;
  total?: number;
}

/** ORDER BY terms of the plan, over `e` (the page) or `p` (the page's output, its key columns `k<i>`). */
function orderTerms(dialect: SqlDialect, plan: SqlSelectPlan, alias: 'e' | 'p'): { select: string[]; orderBy: string } {
  const select: string[] = [];
  const terms = plan.order.map((term, i) => {
    if (term.kind === 'column') return dialect.orderTerm(alias, term.column, term.desc);
    const dir = term.desc ? 'DESC' : 'ASC';
    const key = dialect.sortKey(term.segments, 'e.data');
    const names = [`k${i}r`, `k${i}n`, `k${i}t`];
    if (alias === 'e') select.push(`${key.rank} AS ${names[0]}`, `${key.num} AS ${names[1]}`, `${key.txt} AS ${names[2]}`);
    const parts = alias === 'e' ? [key.rank, key.num, key.txt] : names.map((name) => `p.${name}`);
    return parts.map((part) => `${part} ${dir}`).join(', ');
  });
  return { select, orderBy: terms.join(', ') };
}

/**
 * Runs a plan over one data source: the page of entries (parsed) and, with `count`, the number of matches
 * before offset/limit, both read by one statement (one snapshot). `indexed`: data paths with an expression
 * index on this data source (indexes.ts); their tests then also get keys.ts's index form. null when the
 * order is on a data column and some matching row has a value SQL does not order as JS does (keys.ts's
 * rank 3): the caller then runs the JS evaluator. When a matching row has rank 3 on an indexed path the
 * index form left out, the plan runs again without it.
 */
export async function runSqlSelect(
  db: Queryable,
  engine: 'sqlite' | 'postgres',
  dataSourceId: number,
  plan: SqlSelectPlan,
  indexed: ReadonlySet<string> = new Set(),
): Promise<{ entries: EntryRecord[]; total?: number } | null> {
  const statement = selectStatement(engine, dataSourceId, plan, indexed);
  const rows = await db.all<Row>(statement.text, statement.params);
  const yes = (flag: unknown) => flag === true || flag === 1;
  if (yes(rows[0]?.amb)) return null;
  if (yes(rows[0]?.ambw)) return runSqlSelect(db, engine, dataSourceId, plan);
  const entries: EntryRecord[] = [];
  for (const row of rows) {
    if (row.id === null || row.data === null) continue;
    entries.push({
      id: row.id,
      dataSourceId,
      data: JSON.parse(row.data) as Record<string, unknown>,
      order: row.sort_order,
      createdAt: row.created_at,
      updatedAt: row.updated_at,
    });
  }
  return plan.count ? { entries, total: Number(rows[0]?.total ?? 0) } : { entries };
}

/** runSqlSelect's one statement (exported for EXPLAIN in tests and benchmarks). */
export function selectStatement(engine: 'sqlite' | 'postgres', dataSourceId: number, plan: SqlSelectPlan, indexed: ReadonlySet<string> = new Set()): Sql {
  const dialect = dialectOf(engine);
  const keyOf = (segments: readonly string[]) => dialect.sortKey(segments, 'e.data');
  const indexOf = (segments: readonly string[]) => (indexed.has(pathKey(segments)) ? indexName(dataSourceId, pathKey(segments)) : null);
  const exact = renderCond(dialect, plan.where);
  // One index to go through: the first order key's (the page then stops early), else a tested path's. Only
  // its path gets the index form (the keys of other paths would only be computed row by row).
  const first = plan.order[0];
  const candidates = new Map<string, string[]>();
  prefilterOf(plan.where, indexed, keyOf, candidates);
  const chosen = first?.kind === 'path' && indexed.has(pathKey(first.segments)) ? first.segments : [...candidates.values()][0];
  const prefiltered = new Map<string, string[]>();
  const prefilter = chosen ? prefilterOf(plan.where, new Set([pathKey(chosen)]), keyOf, prefiltered) : null;
  const where = prefilter ? sql`${prefilter} AND ${exact}` : exact;
  const index = chosen ? indexOf(chosen) : null;
  const from = dialect.entries(dataSourceId, index);
  const page = orderTerms(dialect, plan, 'e');
  const limit = plan.limit > 0 ? plan.limit : -1;
  const columns = ['e.id', 'e.data', 'e.sort_order', 'e.created_at', 'e.updated_at', ...page.select].join(', ');
  const pageSql = sql`SELECT ${raw(columns)} FROM ${from} WHERE ${where} ORDER BY ${raw(page.orderBy)} LIMIT ${raw(String(limit))} OFFSET ${plan.offset}`;
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
  const orderPaths = plan.order.flatMap((term) => (term.kind === 'path' ? [term.segments] : []));
  const heads: Sql[] = [];
  const headColumns: string[] = [];
  if (orderPaths.length > 0 || prefiltered.size > 0) {
    heads.push(sql`(SELECT ${anyRank3(orderPaths)} AS amb, ${anyRank3([...prefiltered.values()])} AS ambw) g`);
    headColumns.push('g.amb', 'g.ambw');
  }
  if (plan.count) {
    heads.push(sql`(SELECT COUNT(*) AS total FROM ${from} WHERE ${where}) c`);
    headColumns.push('c.total');
  }
  return heads.length > 0
    ? sql`SELECT ${raw([...headColumns, 'p.id', 'p.data', 'p.sort_order', 'p.created_at', 'p.updated_at'].join(', '))} FROM ${joinSql(heads, ' CROSS JOIN ')} LEFT JOIN (${pageSql}) p ON 1 = 1 ORDER BY ${raw(orderTerms(dialect, plan, 'p').orderBy)}`
    : pageSql;
}
