import type { Queryable } from '../../db/database.js';
import type { SqlAggregatePlan } from './aggregate-plan.js';
import { raw, Sql, sql } from './fragment.js';
import { idText } from './dialect.js';
import { indexName, pathKey } from './prefilter.js';
import { sqliteSortKey } from './sqlite-keys.js';
import { budgetSalt, sqliteBudgetCheck } from '../../db/statement-budget.js';

/**
 * `$group` on an indexed data path, counting only (`$count`, `$sum: <number>`), over every entry (no `where`,
 * no `$match`), on SQLite: the groups are read from the path's expression index alone (indexes.ts: `rank, num,
 * txt, sort_order, id DESC`), without parsing a document. keys.ts's key tells apart what mingo groups apart
 * except booleans, which share rank 1 with strings (`true` and `'true'`): a group whose text is `'true'` or
 * `'false'` hands the query to the scan (aggregate.ts), as does a rank 3 (an array, object, numeric string, …,
 * which the scan answers or flags). Rank 0 is the number, 1 the string, 2 null or missing (one group for
 * mingo too). PostgreSQL cannot read expression columns from its index alone: it uses the scan.
 */
export function indexedGroupPath(engine: 'sqlite' | 'postgres', plan: SqlAggregatePlan, indexed: ReadonlySet<string>): string[] | null {
  if (engine !== 'sqlite' || plan.key.kind !== 'path' || plan.matchPaths.length > 0 || plan.where.kind !== 'const' || !plan.where.value) return null;
  if (!plan.accumulators.every((acc) => acc.op === 'count' || acc.op === 'times')) return null;
  return indexed.has(pathKey(plan.key.segments)) ? plan.key.segments : null;
}

/**
 * The range of `order` in the data source and the greatest id (all data sources: an upper bound), which make the
 * first-appearance key `sort_order * 2^32 - id` exact when small enough. Scalar subqueries on indexes, computed
 * once: as aggregates beside the others they would cost a second pass (SQLite then reads every row again).
 */
export const orderBounds = (dataSourceId: number) => {
  const id = idText(dataSourceId).text;
  return [
    `(SELECT MIN(sort_order) FROM data_source_entries WHERE data_source_id = ${id}) AS omin`,
    `(SELECT MAX(sort_order) FROM data_source_entries WHERE data_source_id = ${id}) AS omax`,
    '(SELECT MAX(id) FROM data_source_entries) AS idmax',
  ];
};

/** The statement (exported for EXPLAIN in tests and benchmarks). */
export function indexedGroupStatement(dataSourceId: number, segments: readonly string[], maxGroups: number): Sql {
  const key = sqliteSortKey(segments, 'data');
  const index = indexName(dataSourceId, pathKey(segments));
  return sql`SELECT ${raw(key.rank)} AS r, ${raw(key.num)} AS nm, ${raw(key.txt)} AS t, COUNT(*) AS n, MIN(sort_order * 4294967296 - id) AS fa, ${raw(orderBounds(dataSourceId).join(', '))} FROM data_source_entries INDEXED BY ${raw(index)} WHERE data_source_id = ${idText(dataSourceId)} AND ${new Sql(sqliteBudgetCheck('id'), [budgetSalt()])} GROUP BY 1, 2, 3 ORDER BY fa LIMIT ${raw(String(maxGroups + 1))}`;
}

export interface IndexedGroup {
  id: unknown;
  n: number;
}

/** The groups in mingo's order, or null when the scan must decide (see above). */
export async function runIndexedGroup(db: Queryable, dataSourceId: number, segments: readonly string[], maxGroups: number): Promise<IndexedGroup[] | null> {
  const statement = indexedGroupStatement(dataSourceId, segments, maxGroups);
  const rows = await db.all<Record<string, unknown>>(statement.text, statement.params);
  const groups: IndexedGroup[] = [];
  for (const row of rows) {
    if (Math.abs(Number(row.omin)) >= 2 ** 30 || Math.abs(Number(row.omax)) >= 2 ** 30 || Number(row.idmax) >= 2 ** 32) return null;
    const rank = Number(row.r);
    if (rank === 3 || (rank === 1 && (row.t === 'true' || row.t === 'false'))) return null;
    groups.push({ id: rank === 0 ? Number(row.nm) : rank === 1 ? row.t : null, n: Number(row.n) });
  }
  return groups;
}
