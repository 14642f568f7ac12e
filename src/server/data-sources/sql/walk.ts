import type { Queryable } from '../../db/database.js';
import { idText, type SqlDialect } from './dialect.js';
import { raw, sql } from './fragment.js';
import { indexName, pathKey, prefilterOf, seekPath } from './prefilter.js';
import type { SqlSelectPlan } from './select.js';

/**
 * How a page in `createdAt` order reaches its entries (migration 0014's index `(data_source_id, created_at,
 * sort_order DESC, id)`). Seeking the `where`'s expression index reads its M matches and sorts them; walking
 * the `createdAt` index in the page's order reads entries until `offset + limit` of them match, about
 * `need · N / M` of N entries when matches are spread evenly. So:
 *
 * 1. N is estimated from the data source's id span (two index seeks; an upper bound);
 * 2. with a tested indexed path, M is counted through its index form, bounded at `√(need · N)` (index only
 *    on SQLite): fewer matches than that, and the seek reads fewer entries than the walk would;
 * 3. otherwise the walk goes, but only over the first `4 · √(need · N)` entries of the order (`bound`: the
 *    `createdAt` that far in, read from the index). Matches bunched at the far end (old entries in a
 *    newest-first page) then cost that many entries, after which select.ts seeks as in 1.
 *
 * Only the access path changes: every variant returns the page of the same ORDER BY over the same exact
 * condition. A walk that stops at `bound` is used only when it found the whole page (`need` matches among
 * the entries up to `bound` are the first `need` of all, since every entry past it sorts after them).
 */
export type Access = { kind: 'seek' } | { kind: 'walk'; bound: string | null };
export const SEEK: Access = { kind: 'seek' };
export const CREATED_INDEX = 'data_source_entries_created';
const WALK_BUDGET = 4;

export async function chooseAccess(
  db: Queryable,
  dialect: SqlDialect,
  dataSourceId: number,
  plan: SqlSelectPlan,
  indexed: ReadonlySet<string>,
): Promise<Access> {
  const first = plan.order[0];
  if (plan.limit <= 0 || first?.kind !== 'column' || first.column !== 'created_at') return SEEK;
  const id = idText(dataSourceId);
  const span = await db.get<{ lo: number | string | null; hi: number | string | null }>(
    sql`SELECT (SELECT MIN(id) FROM data_source_entries WHERE data_source_id = ${id}) AS lo, (SELECT MAX(id) FROM data_source_entries WHERE data_source_id = ${id}) AS hi`
      .text,
  );
  if (span?.lo === null || span?.lo === undefined || span.hi === null) return SEEK;
  const entries = Number(span.hi) - Number(span.lo) + 1;
  const threshold = Math.ceil(Math.sqrt((plan.limit + plan.offset) * entries));
  const keyOf = (segments: readonly string[]) => dialect.sortKey(segments, 'e.data', 'e.doc');
  const tested = seekPath(plan.where, indexed, keyOf);
  const prefilter = tested && prefilterOf(plan.where, new Set([pathKey(tested)]), keyOf, new Map());
  if (tested && prefilter) {
    const from = dialect.entries(dataSourceId, indexName(dataSourceId, pathKey(tested)));
    const probe = sql`SELECT COUNT(*) AS m FROM (SELECT 1 AS one FROM ${from} WHERE ${prefilter} LIMIT ${threshold}) x`;
    const found = await db.get<{ m: number | string }>(probe.text, probe.params);
    if (Number(found?.m ?? 0) < threshold) return SEEK;
  }
  const budget = WALK_BUDGET * threshold;
  if (entries <= budget) return { kind: 'walk', bound: null };
  const at = sql`SELECT e.created_at AS bound FROM ${dialect.entries(dataSourceId, CREATED_INDEX)} ORDER BY ${raw(dialect.orderTerm('e', 'created_at', first.desc))} LIMIT 1 OFFSET ${budget}`;
  const row = await db.get<{ bound: string }>(at.text, at.params);
  return { kind: 'walk', bound: row?.bound ?? null };
}
