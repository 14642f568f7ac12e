import type { KeptRows, KeptText, Queryable, SqlValue, Transaction } from '../../db/database.js';
import type { EntryRecord } from '../types.js';
import { raw, sql } from '../sql/fragment.js';
import { recordExisting, recordInserted, recordInsertedRange } from './changes.js';
import { changedEntriesAtVersion, changedIds, insertedAfter } from './version-rows.js';

/**
 * Data-access layer of the `data_source_entries` table. `data` is JSON text. Every write records the prior state
 * of what it touches first (changes.ts), so versions can be rebuilt: no other module writes this table.
 */

export interface RawEntryRow {
  id: number;
  data: string;
  sort_order: number;
  created_at: string;
  updated_at: string;
}

/** A row of `SELECT` as an array (kept rows). */
export type EntryTuple = readonly [id: number, data: string, sortOrder: number, createdAt: string, updatedAt: string];

const SELECT = 'SELECT id, data, sort_order, created_at, updated_at FROM data_source_entries';

export function entryFromRow(dataSourceId: number, row: RawEntryRow): EntryRecord {
  return {
    id: row.id,
    dataSourceId,
    data: JSON.parse(row.data) as Record<string, unknown>,
    order: row.sort_order,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/** Every entry of a data source, oldest id first, data still as JSON text. */
export async function loadRawEntries(db: Queryable, dataSourceId: number): Promise<RawEntryRow[]> {
  return db.all<RawEntryRow>(`${SELECT} WHERE data_source_id = ? ORDER BY id`, [dataSourceId]);
}

/** Up to `limit` entries with an id above `afterId`, by id (a scan in pages: scan-select.ts). */
export async function entryRowsAfter(db: Queryable, dataSourceId: number, afterId: number, limit: number): Promise<RawEntryRow[]> {
  return db.all<RawEntryRow>(`${SELECT} WHERE data_source_id = ? AND id > ? ORDER BY id LIMIT ?`, [dataSourceId, afterId, limit]);
}

export async function loadEntries(db: Queryable, dataSourceId: number): Promise<EntryRecord[]> {
  const rows = await loadRawEntries(db, dataSourceId);
  const entries = new Array<EntryRecord>(rows.length);
  for (let i = 0; i < rows.length; i++) entries[i] = entryFromRow(dataSourceId, rows[i]!);
  return entries;
}

/**
 * Every entry of a data source in the default order (`order` ASC, then `id` DESC), data still as JSON text, kept by
 * the database as they are now, to be read in pages after the transaction (a streamed answer).
 */
export function keepEntryRows(tx: Transaction, dataSourceId: number): Promise<KeptRows<EntryTuple>> {
  return tx.keep<EntryTuple>(`${SELECT} WHERE data_source_id = ? ORDER BY sort_order, id DESC`, [dataSourceId]);
}

/**
 * Every entry of a data source in the default order, each as the JSON text an answer writes for it (entry-pages.ts:
 * `JSON.stringify(toView(entry))`, `deletedAt` only in a commit's shape, the stored `data` text as it is), built by
 * the database and kept as `keepEntryRows` keeps rows. `json_quote` (SQLite) and `to_json(…)::text` (PostgreSQL)
 * quote a text as `JSON.stringify` does; ids and orders are integers, written the same by SQL and JS.
 */
export function keepEntryText(tx: Transaction, dialect: 'sqlite' | 'postgres', dataSourceId: number, deletedAt: boolean): Promise<KeptText> {
  return tx.keepText({
    columns: 'id, data, sort_order, created_at, updated_at',
    from: 'FROM data_source_entries WHERE data_source_id = ? ORDER BY sort_order, id DESC',
    text: entryJsonSql(dialect, dataSourceId, deletedAt),
    params: [dataSourceId],
  });
}

/**
 * The SQL expression of an entry's answer JSON (see keepEntryText) over the columns `id`, `data`, `sort_order`,
 * `created_at`, `updated_at`.
 */
export function entryJsonSql(dialect: 'sqlite' | 'postgres', dataSourceId: number, deletedAt: boolean): string {
  if (!Number.isSafeInteger(dataSourceId) || dataSourceId <= 0) throw new Error(`Invalid data source id ${dataSourceId}`);
  const quote = (column: string) => (dialect === 'sqlite' ? `json_quote(${column})` : `to_json(${column})::text`);
  return (
    `'{"id":' || id || ',"dataSourceId":${dataSourceId},"data":' || data || ',"order":' || sort_order || ',"createdAt":' || ${quote('created_at')}` +
    ` || ',"updatedAt":' || ${quote('updated_at')} || '${deletedAt ? ',"deletedAt":null}' : '}'}'`
  );
}

/** Count and highest `sort_order` of a data source's entries (one indexed read). */
export async function countEntries(db: Queryable, dataSourceId: number): Promise<{ count: number; maxOrder: number | null }> {
  const row = await db.get<{ count: number | string; max_order: number | string | null }>(
    'SELECT COUNT(*) AS count, MAX(sort_order) AS max_order FROM data_source_entries WHERE data_source_id = ?',
    [dataSourceId],
  );
  return { count: Number(row?.count ?? 0), maxOrder: row?.max_order === null || row?.max_order === undefined ? null : Number(row.max_order) };
}

/** The highest `order` of a data source's entries (null when it has none): one seek of its order index. */
export async function maxEntryOrder(db: Queryable, dataSourceId: number): Promise<number | null> {
  const row = await db.get<{ max_order: number | string | null }>('SELECT MAX(sort_order) AS max_order FROM data_source_entries WHERE data_source_id = ?', [
    dataSourceId,
  ]);
  return row?.max_order === null || row?.max_order === undefined ? null : Number(row.max_order);
}

/** The number of entries of a data source, counted up to `max` (the index reads `max` entries at most). */
export async function countEntriesUpTo(db: Queryable, dataSourceId: number, max: number): Promise<number> {
  const row = await db.get<{ count: number | string }>('SELECT COUNT(*) AS count FROM (SELECT 1 FROM data_source_entries WHERE data_source_id = ? LIMIT ?) t', [
    dataSourceId,
    Math.max(0, Math.floor(max)),
  ]);
  return Number(row?.count ?? 0);
}

/** A page of entries' data (ids above `afterId`, oldest first), still as JSON text: for scans that keep nothing. */
export async function entryDataPage(db: Queryable, dataSourceId: number, afterId: number, limit: number): Promise<{ id: number; data: string }[]> {
  return db.all<{ id: number; data: string }>('SELECT id, data FROM data_source_entries WHERE data_source_id = ? AND id > ? ORDER BY id LIMIT ?', [
    dataSourceId,
    afterId,
    limit,
  ]);
}

/** The entries of these ids that exist (any order). */
export async function findEntriesByIds(db: Queryable, dataSourceId: number, ids: readonly number[]): Promise<EntryRecord[]> {
  const out: EntryRecord[] = [];
  const unique = [...new Set(ids)];
  for (let i = 0; i < unique.length; i += 500) {
    const chunk = unique.slice(i, i + 500);
    const rows = await db.all<RawEntryRow>(`${SELECT} WHERE data_source_id = ? AND id IN (${chunk.map(() => '?').join(', ')})`, [dataSourceId, ...chunk]);
    for (const row of rows) out.push(entryFromRow(dataSourceId, row));
  }
  return out;
}

/** The rows of these ids that exist, oldest first (`ids` at most a few thousand: one statement). */
export async function findRawEntriesByIds(db: Queryable, dataSourceId: number, ids: readonly number[]): Promise<RawEntryRow[]> {
  return db.all<RawEntryRow>(`${SELECT} WHERE data_source_id = ? AND id IN (${ids.map(() => '?').join(', ')}) ORDER BY id`, [dataSourceId, ...ids]);
}

export async function findEntry(db: Queryable, dataSourceId: number, id: number): Promise<EntryRecord | undefined> {
  const row = await db.get<RawEntryRow>(`${SELECT} WHERE data_source_id = ? AND id = ?`, [dataSourceId, id]);
  return row && entryFromRow(dataSourceId, row);
}

export async function insertEntryRow(
  db: Queryable,
  dataSourceId: number,
  init: { data: string; order: number; now: string; id?: number; createdAt?: string; updatedAt?: string },
): Promise<number> {
  let id = init.id;
  if (id !== undefined) {
    await db.run('INSERT INTO data_source_entries (id, data_source_id, data, sort_order, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)', [
      id,
      dataSourceId,
      init.data,
      init.order,
      init.createdAt ?? init.now,
      init.updatedAt ?? init.now,
    ]);
  } else {
    const row = await db.get<{ id: number }>(
      'INSERT INTO data_source_entries (data_source_id, data, sort_order, created_at, updated_at) VALUES (?, ?, ?, ?, ?) RETURNING id',
      [dataSourceId, init.data, init.order, init.createdAt ?? init.now, init.now],
    );
    id = row!.id;
  }
  await recordInserted(db, 'e.id = ?', [id]);
  return id;
}

export async function updateEntryRow(db: Queryable, id: number, init: { data: string; now: string; order?: number }): Promise<void> {
  await recordExisting(db, 'e.id = ?', [id]);
  if (init.order === undefined) await db.run('UPDATE data_source_entries SET data = ?, updated_at = ? WHERE id = ?', [init.data, init.now, id]);
  else await db.run('UPDATE data_source_entries SET data = ?, sort_order = ?, updated_at = ? WHERE id = ?', [init.data, init.order, init.now, id]);
}

export async function deleteEntryRow(db: Queryable, dataSourceId: number, id: number): Promise<boolean> {
  await recordExisting(db, 'e.data_source_id = ? AND e.id = ?', [dataSourceId, id]);
  return (await db.run('DELETE FROM data_source_entries WHERE data_source_id = ? AND id = ?', [dataSourceId, id])).changes > 0;
}

export async function deleteAllEntries(db: Queryable, dataSourceId: number): Promise<number> {
  await recordExisting(db, 'e.data_source_id = ?', [dataSourceId]);
  return (await db.run('DELETE FROM data_source_entries WHERE data_source_id = ?', [dataSourceId])).changes;
}

export async function deleteEntriesByIds(db: Queryable, dataSourceId: number, ids: readonly number[]): Promise<number> {
  let changes = 0;
  for (let i = 0; i < ids.length; i += 500) {
    const chunk = ids.slice(i, i + 500);
    const marks = chunk.map(() => '?').join(', ');
    await recordExisting(db, `e.data_source_id = ? AND e.id IN (${marks})`, [dataSourceId, ...chunk]);
    changes += (await db.run(`DELETE FROM data_source_entries WHERE data_source_id = ? AND id IN (${marks})`, [dataSourceId, ...chunk] as SqlValue[])).changes;
  }
  return changes;
}

const BATCH = 200;

/**
 * Inserts many entries with multi-row statements; returns their ids in the order given. Ids of one statement
 * are assigned in row order, so the returned ids are sorted to match (RETURNING order itself is unspecified).
 */
export async function insertEntryRows(db: Queryable, dataSourceId: number, items: readonly { data: string; order: number }[], now: string): Promise<number[]> {
  const ids: number[] = [];
  for (let start = 0; start < items.length; start += BATCH) {
    const chunk = items.slice(start, start + BATCH);
    const params: SqlValue[] = [];
    for (const item of chunk) params.push(dataSourceId, item.data, item.order, now, now);
    const values = chunk.map(() => '(?, ?, ?, ?, ?)').join(', ');
    const rows = await db.all<{ id: number }>(
      `INSERT INTO data_source_entries (data_source_id, data, sort_order, created_at, updated_at) VALUES ${values} RETURNING id`,
      params,
    );
    const chunkIds = rows.map((r) => r.id).sort((a, b) => a - b);
    if (chunkIds.length) await recordInsertedRange(db, dataSourceId, chunkIds[0]!, chunkIds[chunkIds.length - 1]!);
    for (const id of chunkIds) ids.push(id);
  }
  return ids;
}

/**
 * Puts back the entries as they were at `dataVersion` (a version rebuilt from changes, version-rows.ts) by
 * rewriting only what changed since: the entries changed or inserted since are deleted, then those the version
 * held are inserted as they were (ids and timestamps too). Entries untouched since are already as they were.
 * Undo records are written as by every write (changes.ts). Returns how many entries were deleted and inserted.
 */
export async function restoreChangedEntries(db: Queryable, dataSourceId: number, dataVersion: number): Promise<{ deleted: number; inserted: number }> {
  const changed = (alias: string) =>
    sql`${raw(alias)}.data_source_id = ${dataSourceId} AND (${raw(alias)}.id IN (${changedIds(dataSourceId, dataVersion)}) OR ${insertedAfter(dataSourceId, dataVersion, `${alias}.id`)})`;
  const existing = changed('e');
  await recordExisting(db, existing.text, existing.params);
  const remove = changed('data_source_entries');
  const deleted = (await db.run(`DELETE FROM data_source_entries WHERE ${remove.text}`, remove.params)).changes;
  const rows = changedEntriesAtVersion(dataSourceId, dataVersion);
  const inserted = (
    await db.run(
      `INSERT INTO data_source_entries (id, data_source_id, data, sort_order, created_at, updated_at)
       SELECT r.id, r.data_source_id, r.data, r.sort_order, r.created_at, r.updated_at FROM (${rows.text}) r ORDER BY r.id`,
      rows.params,
    )
  ).changes;
  // The ids put back that did not exist before this write (the others were recorded by the delete above).
  const back = sql`e.data_source_id = ${dataSourceId} AND e.id IN (${changedIds(dataSourceId, dataVersion)})`;
  await recordInserted(db, back.text, back.params);
  return { deleted, inserted };
}
