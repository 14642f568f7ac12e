import type { Queryable } from '../db/database.js';
import type { Core } from './core.js';
import { dataVersion } from './store/data-sources.js';
import { countEntries, entryDataPage, maxEntryOrder } from './store/entries.js';
import type { DataSourceRecord, EntryRecord } from './types.js';

/**
 * What a version records of the data set it keeps (count, columns), and where an append goes on (next order),
 * known without holding the data set: a data source larger than the entry cache's budget is never loaded for an
 * append (import, commit) or a version record.
 */
export interface DataSetSummary {
  /** The `data_version` the summary is of. */
  version: number;
  count: number;
  columns: string[];
  /** `order` of an entry appended after all others. */
  nextOrder: number;
}

/** A data source's undeclared columns: every key seen in the entries, oldest entry first, first seen first. */
function seenColumns(entries: readonly EntryRecord[]): string[] {
  const seen = new Set<string>();
  for (const e of entries) for (const key of storedKeys(e.data)) seen.add(key);
  return [...seen];
}

/** The keys of `data` as stored (JSON.stringify leaves out a key whose value is undefined, as server code may pass). */
const storedKeys = (data: Record<string, unknown>) => Object.keys(data).filter((key) => data[key] !== undefined);

/** Columns of a data source: the declared ones, else every key seen in the entries (first seen first). */
export function columnsOf(ds: DataSourceRecord, entries: readonly EntryRecord[]): string[] {
  return ds.columns ?? seenColumns(entries);
}

export function summaryOf(ds: DataSourceRecord, state: { version: number; entries: readonly EntryRecord[] }): DataSetSummary {
  let max = -1;
  for (const e of state.entries) if (e.order > max) max = e.order;
  return { version: state.version, count: state.entries.length, columns: columnsOf(ds, state.entries), nextOrder: max + 1 };
}

export interface Memo {
  version: number;
  count: number;
  /** Undefined when the columns were declared when it was taken (not scanned). */
  seen: string[] | undefined;
  nextOrder: number;
}

/** The last summary of each data source (at most `max`, least recently used first out): a few numbers and names each. */
export interface SummaryMemo {
  get(dataSourceId: number, version: number): Memo | undefined;
  set(dataSourceId: number, memo: Memo): void;
  drop(dataSourceId: number): void;
}

export function createSummaryMemo(max = 1024): SummaryMemo {
  const memos = new Map<number, Memo>();
  return {
    get(id, version) {
      const memo = memos.get(id);
      if (!memo || memo.version !== version) return undefined;
      memos.delete(id);
      memos.set(id, memo);
      return memo;
    },
    set(id, memo) {
      memos.delete(id);
      memos.set(id, memo);
      while (memos.size > max) memos.delete(memos.keys().next().value!);
    },
    drop: (id) => void memos.delete(id),
  };
}

const SCAN_PAGE = 5000;

/**
 * The summary of the data set inside a write's transaction: from the entry cache when it holds this version,
 * else from the memo of this version, else counted in SQL with the undeclared columns read in pages whose rows
 * are dropped at once (the same keys in the same order as `columnsOf`). `entries`: the cached data set, if any.
 */
export async function summarizeDataSet(core: Core, tx: Queryable, ds: DataSourceRecord): Promise<DataSetSummary & { entries?: readonly EntryRecord[] }> {
  const version = (await dataVersion(tx, ds.id)) ?? -1;
  const cached = core.cache.peek(ds.id, version);
  if (cached) return { ...summaryOf(ds, { version, entries: cached }), entries: cached };
  let memo = core.summaries.get(ds.id, version);
  if (!memo || (!ds.columns && !memo.seen)) {
    const { count, maxOrder } = await countEntries(tx, ds.id);
    memo = { version, count, seen: ds.columns ? undefined : await scanColumns(tx, ds.id), nextOrder: (maxOrder ?? -1) + 1 };
    core.summaries.set(ds.id, memo);
  }
  return { version, count: memo.count, columns: ds.columns ?? memo.seen!, nextOrder: memo.nextOrder };
}

/** Calls `fn` with the data of every entry, oldest id first, read in pages that are dropped at once. */
async function scanEntryData(tx: Queryable, dataSourceId: number, fn: (data: Record<string, unknown>) => void): Promise<void> {
  for (let after = 0; ; ) {
    const page = await entryDataPage(tx, dataSourceId, after, SCAN_PAGE);
    for (const row of page) fn(JSON.parse(row.data) as Record<string, unknown>);
    if (page.length < SCAN_PAGE) return;
    after = page[page.length - 1]!.id;
  }
}

async function scanColumns(tx: Queryable, dataSourceId: number): Promise<string[]> {
  const seen = new Set<string>();
  await scanEntryData(tx, dataSourceId, (data) => {
    for (const key of Object.keys(data)) seen.add(key);
  });
  return [...seen];
}

/**
 * Reads the data of every entry of the data source as it is now, oldest id first, into what `begin()` returns:
 * from the entry cache when it holds the current version, else in pages in one transaction (so from one state).
 * `begin` runs again when the database retries the transaction, so nothing of a failed attempt is kept.
 */
export async function readEntryData<T>(core: Core, dataSourceId: number, begin: () => { add(data: Record<string, unknown>): void; result: T }): Promise<T> {
  const cached = core.cache.peek(dataSourceId, (await dataVersion(core.ctx.db, dataSourceId)) ?? -1);
  if (cached) {
    const reader = begin();
    for (const e of cached) reader.add(e.data);
    return reader.result;
  }
  return core.ctx.db.transaction(async (tx) => {
    const reader = begin();
    await scanEntryData(tx, dataSourceId, (data) => reader.add(data));
    return reader.result;
  });
}

/**
 * After a write that only appended `inserted` and produced `version`: the memo moves on from the one of
 * `version - 1` (or from `from`, the summary the write took of that version), since count, columns and next order
 * follow from what was added. Any other write leaves the memo behind, so the next summary is taken afresh.
 */
export function advanceSummary(core: Core, ds: DataSourceRecord, version: number, inserted: readonly EntryRecord[], from?: DataSetSummary): void {
  const before =
    core.summaries.get(ds.id, version - 1) ??
    (from && from.version === version - 1
      ? { version: from.version, count: from.count, seen: ds.columns ? undefined : from.columns, nextOrder: from.nextOrder }
      : undefined);
  if (!before) return;
  let next = before.nextOrder;
  for (const e of inserted) if (e.order >= next) next = e.order + 1;
  const seen = before.seen && [...new Set([...before.seen, ...seenColumns(inserted)])];
  core.summaries.set(ds.id, { version, count: before.count + inserted.length, seen, nextOrder: next });
}

/**
 * Entries older than a written one read to place its keys, oldest first, in batches that stop as soon as every key
 * is placed (usually after the first entry): at most PLACING_ROWS in all, so a write never reads more.
 */
const PLACING_BATCHES = [1, 3, 12, 84];
const PLACING_ROWS = PLACING_BATCHES.reduce((a, b) => a + b, 0);

/**
 * Which of `keys` none of the entries older than `id` holds, looking at the oldest PLACING_ROWS of them
 * (`complete`: every older entry was seen, so the missing keys are held by none; else they may be further on).
 */
async function keysHeldBefore(tx: Queryable, dataSourceId: number, id: number, keys: readonly string[]): Promise<{ missing: Set<string>; complete: boolean }> {
  const missing = new Set(keys);
  if (missing.size === 0) return { missing, complete: true };
  let after = 0;
  for (const size of PLACING_BATCHES) {
    const page = await entryDataPage(tx, dataSourceId, after, size);
    for (const row of page) {
      if (row.id >= id) return { missing, complete: true };
      for (const key of Object.keys(JSON.parse(row.data) as object)) missing.delete(key);
      if (missing.size === 0) return { missing, complete: true };
    }
    if (page.length < size) return { missing, complete: true };
    after = page[page.length - 1]!.id;
  }
  return { missing, complete: false };
}

const sameKeys = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((key, i) => b[i] === key);

/** Whether no entry is newer than `id` (its keys then come last in the columns). */
const isNewest = async (tx: Queryable, dataSourceId: number, id: number) => (await entryDataPage(tx, dataSourceId, id, 1)).length === 0;

/**
 * The memo of `version` after a single-entry update or delete that produced it, from the memo of `version - 1`,
 * read inside the write's transaction (after the write); undefined when there is none or the new columns cannot be
 * placed from the oldest PLACING_ROWS entries (the next summary is then taken afresh). Count and next order follow
 * from the write (the next order is read from the order index when the deleted entry may have held the highest).
 * The undeclared columns are every key in entry order, first seen first: they stay as they were when every key the
 * entry held before or holds now is also held by an older entry; for the newest entry, its keys no older entry
 * holds are the last ones, so they are replaced by its new ones (none for a delete). So an append commit after
 * such a write no longer reads every entry (issue 14, "writes cost what they change").
 */
export async function summaryAfterEntryWrite(
  core: Core,
  tx: Queryable,
  ds: DataSourceRecord,
  version: number,
  write: { id: number; order: number; before: Record<string, unknown>; after?: Record<string, unknown> },
): Promise<Memo | undefined> {
  const memo = core.summaries.get(ds.id, version - 1);
  if (!memo) return undefined;
  const next: Memo = { ...memo, version };
  if (!write.after) {
    next.count = memo.count - 1;
    if (write.order + 1 >= memo.nextOrder) next.nextOrder = ((await maxEntryOrder(tx, ds.id)) ?? -1) + 1;
  }
  if (!memo.seen) return next;
  const before = storedKeys(write.before);
  const after = write.after ? storedKeys(write.after) : [];
  // An update that keeps the entry's keys, in their order (most do), changes no column: nothing to read.
  if (write.after && sameKeys(before, after)) return next;
  const { missing, complete } = await keysHeldBefore(tx, ds.id, write.id, [...new Set([...before, ...after])]);
  if (missing.size === 0) return next;
  if (!complete || !(await isNewest(tx, ds.id, write.id))) return undefined;
  // The newest entry's own keys (held by no older entry) are the last of the columns: its new ones take their place.
  const kept = memo.seen.filter((key) => !missing.has(key) || !before.includes(key));
  const held = new Set(kept);
  next.seen = [...kept, ...after.filter((key) => missing.has(key) && !held.has(key))];
  return next;
}
