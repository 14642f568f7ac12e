import { createHash } from 'node:crypto';
import type { Cond } from './conditions.js';
import { joinSql, sql, type Sql } from './fragment.js';
import { keyTest, keyTestIsExact, type SortKey } from './keys.js';

/** The key of a data path as the index list names it. */
export const pathKey = (segments: readonly string[]) => segments.join('.');

/**
 * The key, in the index list, of a path's descending index (indexes.ts): its sort key DESC, then `sort_order, id
 * DESC`, the order of an `order` by the path DESC with its tie-breakers. ":" is in no data path (paths.ts).
 */
export const descKey = (path: string) => `desc:${path}`;
/** The path of an index list key: `path`, or `desc:path`. */
export const indexedPathOf = (key: string): { path: string; desc: boolean } =>
  key.startsWith('desc:') ? { path: key.slice(5), desc: true } : { path: key, desc: false };

/** The name of the expression index of a data path of a data source (indexes.ts); `descKey(path)` for its descending one. */
export const indexName = (dataSourceId: number, path: string) => `iar_dsi_${dataSourceId}_${createHash('sha256').update(path).digest('hex').slice(0, 12)}`;

/**
 * A condition an index can answer (keys.ts), implied by `cond` for rows of rank below 3 on the paths it
 * names (added to `paths`), on the indexed paths only, or null:
 * a path test on an indexed path; for `and`, the tests of its items that have one; for `or`, the `or` of
 * its items' tests when every item has one. `not` and entry columns give none.
 */
export function prefilterOf(
  cond: Cond,
  indexed: ReadonlySet<string>,
  keyOf: (segments: readonly string[]) => SortKey,
  paths: Map<string, string[]>,
): Sql | null {
  switch (cond.kind) {
    case 'path': {
      const test = indexed.has(pathKey(cond.segments)) ? keyTest(keyOf(cond.segments), cond.test) : null;
      if (test) paths.set(pathKey(cond.segments), cond.segments);
      return test;
    }
    case 'and': {
      const items = cond.items.map((item) => prefilterOf(item, indexed, keyOf, paths)).filter((item): item is Sql => item !== null);
      return items.length === 0 ? null : sql`(${joinSql(items, ' AND ')})`;
    }
    case 'or': {
      const found = new Map<string, string[]>();
      const items = cond.items.map((item) => prefilterOf(item, indexed, keyOf, found));
      if (!items.every((item): item is Sql => item !== null)) return null;
      for (const [key, segments] of found) paths.set(key, segments);
      return sql`(${joinSql(items, ' OR ')})`;
    }
    default:
      return null;
  }
}

/** Data paths of `cond` a prefilter could use (what automatic indexes count), in `into`. */
export function indexablePaths(cond: Cond, into: Set<string>): Set<string> {
  if (cond.kind === 'path' && cond.test.kind !== 'exists' && cond.test.kind !== 'like') into.add(pathKey(cond.segments));
  else if (cond.kind === 'and' || cond.kind === 'or') for (const item of cond.items) indexablePaths(item, into);
  return into;
}

/**
 * Whether `prefilterOf(cond, {path})` is exactly `cond` for every entry of rank below 3 on `path`: `cond` is
 * made only of tests on `path` whose key test is exact (keys.ts), under `and` / `or` (each key test implies
 * rank < 3, and `and`/`or` keep that; `not` has no prefilter). With the rank 3 probe of select.ts, the
 * prefilter alone then counts the matches, without reading the entries.
 */
export function prefilterIsExact(cond: Cond, path: string): boolean {
  switch (cond.kind) {
    case 'path':
      return pathKey(cond.segments) === path && keyTestIsExact(cond.test);
    case 'and':
    case 'or':
      return cond.items.every((item) => prefilterIsExact(item, path));
    default:
      return false;
  }
}

/**
 * The tested indexed path a query should seek: the first one whose index form alone (prefilterOf with only
 * that path) is a condition `cond` implies (in `{ $or: [{ a }, { b }] }` neither is), or undefined.
 */
export function seekPath(cond: Cond, indexed: ReadonlySet<string>, keyOf: (segments: readonly string[]) => SortKey): string[] | undefined {
  const candidates = new Map<string, string[]>();
  prefilterOf(cond, indexed, keyOf, candidates);
  return [...candidates].find(([path]) => prefilterOf(cond, new Set([path]), keyOf, new Map()) !== null)?.[1];
}

/**
 * Whether every entry the index form of `path` lets through has one same key on it (rank, num, txt): `cond`
 * is, or ANDs, a test on `path` for one value (null, or `$eq`/`$in` of a single scalar). The page can then
 * be ordered by that key first without changing its order, which tells PostgreSQL that the index (key,
 * sort_order, id DESC) already gives the default order (it does not infer it from `num IS NULL`).
 */
export function pinsKey(cond: Cond, path: string): boolean {
  if (cond.kind === 'and') return cond.items.some((item) => pinsKey(item, path));
  if (cond.kind !== 'path' || pathKey(cond.segments) !== path) return false;
  const { test } = cond;
  return test.kind === 'null' || (test.kind === 'in' && test.strings.length + test.numbers.length + new Set(test.booleans).size === 1);
}
