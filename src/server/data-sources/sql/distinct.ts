import { isEntryField } from '../query/values.js';
import { ENTRY_COLUMNS, type EntryColumn } from './conditions.js';
import type { SqlDialect } from './dialect.js';
import { joinSql, raw, sql, type Sql } from './fragment.js';
import { orderTerms, type SqlOrderTerm } from './order.js';
import { pathSegments } from './paths.js';

/**
 * `distinct: true` run by the database (docs/sql.md, "Distinct rows"). query/run.ts's distinctSelect orders every
 * match, projects it with `attributes`, keeps the first of equal rows (query/distinct.ts, canonicalKey), then
 * pages the kept rows with offset/limit and counts them for `includePagination`. A projected row is a function
 * of the values its attributes read (entry fields, data paths: missing ones left out), one to one when no value
 * is an object or an array and no literal dotted key is read, so rows are equal exactly when those values are,
 * type by type: the statement keeps, per tuple of the attributes' keys, the first match in the query's total
 * order (ROW_NUMBER over the tuple), then orders, pages and counts the kept ones. A match whose value is an
 * object or array (canonicalKey ignores key order, SQL texts do not) or that holds the literal dotted key flags
 * the query, which the JS evaluator then answers.
 */
export type DistinctKey = { kind: 'column'; column: EntryColumn } | { kind: 'path'; segments: string[] };

/** Attributes a translated distinct reads at most (each is a key of the window's partition). */
export const MAX_DISTINCT_KEYS = 32;

/**
 * The keys that tell the rows of `attributes` apart: `unique` when every row differs (no `attributes`, or `id`
 * among them: `distinct` changes nothing), null when the translation is not exact: `data` whole (an object), a
 * data path pathSegments refuses (numeric segments read array elements, prototype names), or too many.
 * `dataSourceId` and `deletedAt` are the same for every entry of a query: they tell no rows apart.
 */
export function distinctKeys(attributes: readonly string[] | undefined): DistinctKey[] | 'unique' | null {
  if (attributes === undefined || attributes.includes('id')) return 'unique';
  const keys: DistinctKey[] = [];
  const seen = new Set<string>();
  for (const name of attributes) {
    if (name === 'dataSourceId' || name === 'deletedAt') continue;
    if (isEntryField(name)) {
      const column = ENTRY_COLUMNS[name as 'order' | 'createdAt' | 'updatedAt'].column;
      if (!seen.has(column)) keys.push({ kind: 'column', column });
      seen.add(column);
      continue;
    }
    if (name === 'data') return null;
    const path = name.startsWith('data.') ? name.slice(5) : name;
    const segments = pathSegments(path);
    if (!segments) return null;
    if (!seen.has(`data.${path}`)) keys.push({ kind: 'path', segments });
    seen.add(`data.${path}`);
  }
  return keys.length <= MAX_DISTINCT_KEYS ? keys : null;
}

/** The top-level data columns the keys read (a column an access rule hides reads as missing in JS: not translated). */
export const distinctColumns = (keys: readonly DistinctKey[]): string[] => keys.flatMap((key) => (key.kind === 'path' ? [key.segments[0]!] : []));

/**
 * The statement of a distinct select over `matches` (the entries as `e`, through an index or not, and the condition
 * they meet): columns `amb` (a match has rank 3 on an ordered path), `ambw` (select.ts's probe of the index
 * form's rank 3 entries, given), `odd` (a match the keys do not tell apart as canonicalKey does), `total` (with
 * `count`: the kept rows) and the page's rows, in order (one row of NULLs when the page is empty), as select.ts's
 * statement returns them.
 */
export function distinctStatement(
  dialect: SqlDialect,
  matches: { from: Sql; where: Sql },
  order: readonly SqlOrderTerm[],
  keys: readonly DistinctKey[],
  page: { limit: number; offset: number; count: boolean },
  probes: { ambw: Sql },
): Sql {
  const terms = orderTerms(dialect, order, 'e');
  const parts = keys.map((key) => (key.kind === 'column' ? { key: `e.${key.column}`, odd: null } : dialect.distinctKey(key.segments)));
  const partition = parts.map((part) => part.key);
  const odds = parts.flatMap((part) => (part.odd === null ? [] : [part.odd]));
  const window = `ROW_NUMBER() OVER (${partition.length > 0 ? `PARTITION BY ${partition.join(', ')} ` : ''}ORDER BY ${terms.orderBy})`;
  // The flags are computed in the same pass over the matches as the keys (each document parsed once), then read
  // from f: `odd` per match, and the rank of each ordered path (its `k<i>r` column).
  const flag = odds.length === 0 ? [] : [`(${odds.join(' OR ')}) AS odd`];
  const columns = ['e.id', 'e.data', 'e.sort_order', 'e.created_at', 'e.updated_at', ...terms.select, ...flag, `${window} AS rn`].join(', ');
  const firsts = sql`WITH f AS (SELECT ${raw(columns)} FROM ${matches.from} WHERE ${matches.where})`;
  const ranks = order.flatMap((term, i) => (term.kind === 'path' ? [`f.k${i}r = 3`] : []));
  const amb = ranks.length === 0 ? 'FALSE' : `EXISTS (SELECT 1 FROM f WHERE ${ranks.join(' OR ')})`;
  const odd = odds.length === 0 ? 'FALSE' : 'EXISTS (SELECT 1 FROM f WHERE f.odd)';
  const heads: Sql[] = [sql`(SELECT ${raw(amb)} AS amb, ${probes.ambw} AS ambw, ${raw(odd)} AS odd) g`];
  const headColumns = ['g.amb', 'g.ambw', 'g.odd'];
  if (page.count) {
    heads.push(raw('(SELECT COUNT(*) AS total FROM f WHERE f.rn = 1) c'));
    headColumns.push('c.total');
  }
  const orderBy = orderTerms(dialect, order, 'p').orderBy;
  const limit = page.limit > 0 ? page.limit : -1;
  const pageSql = sql`SELECT p.* FROM f p WHERE p.rn = 1 ORDER BY ${raw(orderBy)} LIMIT ${raw(String(limit))} OFFSET ${page.offset}`;
  return sql`${firsts} SELECT ${raw([...headColumns, 'p.id', 'p.data', 'p.sort_order', 'p.created_at', 'p.updated_at'].join(', '))} FROM ${joinSql(heads, ' CROSS JOIN ')} LEFT JOIN (${pageSql}) p ON 1 = 1 ORDER BY ${raw(orderBy)}`;
}
