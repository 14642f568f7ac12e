import type { Queryable } from '../../db/database.js';
import { entryRowsAfter, findRawEntriesByIds, type RawEntryRow } from '../store/entries.js';
import type { Cond } from './conditions.js';
import { renderCond } from './dialect.js';
import { joinSql, raw, sql } from './fragment.js';
import { indexName, pathKey, prefilterOf, seekPath } from './prefilter.js';
import { dialectOf } from './select.js';

/**
 * The candidates of a scan (scan-select.ts, scan-delete.ts) whose `where` the translation leaves to the JS
 * evaluator: the entries that meet `cond`, a Cond implied by that `where` (where.ts `impliedWhere`), so every
 * match is among them; the JS evaluator then runs the whole `where` on them. When `cond` tests a path with an
 * expression index, their ids are read from the index first (`ids`, oldest first: the index's key test, plus the
 * entries of rank 3 the key test leaves out, keys.ts), unless there are more than INDEX_CANDIDATES of them; else
 * the database reads the entries in id order, tests `cond` on each and stops at the page.
 */
export interface Candidates {
  cond: Cond;
  ids: number[] | null;
}

/** At most this many candidate ids are read from an index (8 bytes each); past it the entries are read in id order. */
export const INDEX_CANDIDATES = 250_000;

export async function findCandidates(
  db: Queryable,
  engine: 'sqlite' | 'postgres',
  dataSourceId: number,
  cond: Cond,
  indexed: ReadonlySet<string>,
): Promise<Candidates> {
  const dialect = dialectOf(engine);
  const keyOf = (segments: readonly string[]) => dialect.sortKey(segments, 'e.data', 'e.doc');
  const path = seekPath(cond, indexed, keyOf);
  if (!path) return { cond, ids: null };
  const key = pathKey(path);
  const test = prefilterOf(cond, new Set([key]), keyOf, new Map());
  if (!test) return { cond, ids: null };
  const from = () => dialect.entries(dataSourceId, indexName(dataSourceId, key));
  const arms = [sql`SELECT e.id FROM ${from()} WHERE ${test}`, sql`SELECT e.id FROM ${from()} WHERE ${raw(keyOf(path).rank)} = 3`];
  const statement = sql`SELECT u.id FROM (${joinSql(arms, ' UNION ')}) u ORDER BY u.id LIMIT ${raw(String(INDEX_CANDIDATES + 1))}`;
  let rows: { id: number | string }[];
  try {
    rows = await db.all<{ id: number | string }>(statement.text, statement.params);
  } catch (error) {
    // The index was dropped since the list was read (a definition changed): SQLite's INDEXED BY then refuses the
    // statement; the entries are read in id order instead.
    if (/no such index/i.test(String((error as Error)?.message))) return { cond, ids: null };
    throw error;
  }
  return { cond, ids: rows.length > INDEX_CANDIDATES ? null : rows.map((row) => Number(row.id)) };
}

/**
 * The next page of a scan after id `afterId`, oldest first: of the candidates (candidatePage), or of every entry
 * when there are none (`null`).
 */
export async function scanPage(
  db: Queryable,
  engine: 'sqlite' | 'postgres',
  dataSourceId: number,
  afterId: number,
  limit: number,
  candidates: Candidates | null,
): Promise<{ rows: RawEntryRow[]; last: number; done: boolean }> {
  if (candidates) return candidatePage(db, engine, dataSourceId, afterId, limit, candidates);
  const rows = await entryRowsAfter(db, dataSourceId, afterId, limit);
  return { rows, last: rows.at(-1)?.id ?? afterId, done: rows.length < limit };
}

/**
 * The next page of candidates after id `afterId`, oldest first: at most `limit` rows, and `last`, the id to read
 * on from (0 when none was), with `done` once no candidate is left.
 */
export async function candidatePage(
  db: Queryable,
  engine: 'sqlite' | 'postgres',
  dataSourceId: number,
  afterId: number,
  limit: number,
  candidates: Candidates,
): Promise<{ rows: RawEntryRow[]; last: number; done: boolean }> {
  const { ids } = candidates;
  if (ids) {
    let low = 0;
    let high = ids.length;
    while (low < high) {
      const mid = (low + high) >> 1;
      if (ids[mid]! <= afterId) low = mid + 1;
      else high = mid;
    }
    const page = ids.slice(low, low + limit);
    // An entry deleted since its id was read is not among the rows: `last` is the page's last id, not the last row's.
    const rows = page.length === 0 ? [] : await findRawEntriesByIds(db, dataSourceId, page);
    return { rows, last: page.at(-1) ?? afterId, done: low + limit >= ids.length };
  }
  const dialect = dialectOf(engine);
  const statement = sql`SELECT e.id, e.data, e.sort_order, e.created_at, e.updated_at FROM ${dialect.entriesAfter(dataSourceId, afterId)} WHERE ${renderCond(dialect, candidates.cond)} ORDER BY e.id LIMIT ${raw(String(Math.floor(limit)))}`;
  const rows = await db.all<RawEntryRow>(statement.text, statement.params);
  return { rows, last: rows.at(-1)?.id ?? afterId, done: rows.length < limit };
}
