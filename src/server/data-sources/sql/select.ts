import type { Queryable } from '../../db/database.js';
import type { CompiledQuery } from '../query/compile.js';
import type { EntryRecord } from '../query/types.js';
import { columnsOf, type Cond } from './conditions.js';
import { renderCond, type SqlDialect } from './dialect.js';
import { sql, raw } from './fragment.js';
import { translateOrder, type SqlOrderTerm } from './order.js';
import { postgresDialect } from './postgres.js';
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
  return { where, order, limit: body.limit ?? 0, offset: body.offset ?? 0, count: body.includePagination === true, columns: columnsOf(where) };
}

export const dialectOf = (engine: 'sqlite' | 'postgres'): SqlDialect => (engine === 'postgres' ? postgresDialect : sqliteDialect);

interface Row {
  id: number | null;
  data: string | null;
  sort_order: number;
  created_at: string;
  updated_at: string;
  total?: number;
}

/**
 * Runs a plan over one data source: the page of entries (parsed) and, with `count`, the number of matches
 * before offset/limit, both read by one statement (one snapshot).
 */
export async function runSqlSelect(
  db: Queryable,
  engine: 'sqlite' | 'postgres',
  dataSourceId: number,
  plan: SqlSelectPlan,
): Promise<{ entries: EntryRecord[]; total?: number }> {
  const dialect = dialectOf(engine);
  const where = renderCond(dialect, plan.where);
  const orderBy = (alias: string) => raw(plan.order.map((term) => dialect.orderTerm(alias, term.column, term.desc)).join(', '));
  const limit = plan.limit > 0 ? plan.limit : -1;
  const page = sql`SELECT e.id, e.data, e.sort_order, e.created_at, e.updated_at FROM ${dialect.entries(dataSourceId)} WHERE ${where} ORDER BY ${orderBy('e')} LIMIT ${raw(String(limit))} OFFSET ${plan.offset}`;
  const statement = plan.count
    ? sql`SELECT c.total, p.id, p.data, p.sort_order, p.created_at, p.updated_at FROM (SELECT COUNT(*) AS total FROM ${dialect.entries(dataSourceId)} WHERE ${where}) c LEFT JOIN (${page}) p ON 1 = 1 ORDER BY ${orderBy('p')}`
    : page;
  const rows = await db.all<Row>(statement.text, statement.params);
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
