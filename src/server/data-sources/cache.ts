import type { Database, Queryable } from '../db/database.js';
import { countEntriesUpTo, loadEntries } from './store/entries.js';
import { dataVersion } from './store/data-sources.js';
import type { EntryRecord } from './types.js';

/**
 * In-process cache of the parsed entries of each data source, keyed by the data source's `data_version`
 * counter stored in the database. Every write bumps the counter in its transaction, so a cached array is
 * used only while it matches the database; this stays correct when several processes share a database.
 *
 * Cached arrays and entry objects are shared and must never be mutated: writers build new arrays
 * (copy-on-write) and new entry objects.
 *
 * Memory is bounded by `maxEntries` (`limits.entryCacheEntries`), counted over all data sources, each counting
 * at least 1; the least recently used go first. A data source larger than the budget is never cached, so a
 * single-entry write never copies more than the budget.
 */
export interface EntryCache {
  /** The entries at the current version, loading them (in one transaction) when the cache is stale. */
  entries(db: Database, dataSourceId: number): Promise<readonly EntryRecord[]>;
  /** The same from inside a transaction (reads are consistent there). Returns the version too. */
  entriesIn(tx: Queryable, dataSourceId: number): Promise<{ version: number; entries: readonly EntryRecord[] }>;
  /** The cached entries when they are at `version` (no database access). */
  peek(dataSourceId: number, version: number): readonly EntryRecord[] | undefined;
  /** Stores the entries of `version` (after a write computed them). */
  set(dataSourceId: number, version: number, entries: readonly EntryRecord[]): void;
  drop(dataSourceId: number): void;
  /** Whether a data set of `count` entries fits the budget (`set` keeps it). */
  holds(count: number): boolean;
  /** Whether the data source's entries fit the budget, counting no further than the budget (not every entry). */
  holdsDataSet(db: Queryable, dataSourceId: number): Promise<boolean>;
}

export function createEntryCache(options: { maxEntries?: number } = {}): EntryCache {
  const maxEntries = options.maxEntries ?? 100_000;
  const cache = new Map<number, { version: number; entries: readonly EntryRecord[] }>();
  let held = 0;
  const weight = (entries: readonly EntryRecord[]) => Math.max(1, entries.length);
  const remove = (id: number) => {
    const current = cache.get(id);
    if (!current) return;
    held -= weight(current.entries);
    cache.delete(id);
  };
  const set = (id: number, version: number, entries: readonly EntryRecord[]) => {
    const current = cache.get(id);
    if (current && current.version > version) return; // a newer state is already cached
    remove(id);
    if (weight(entries) > maxEntries) return; // too large to keep: read from the database when needed
    cache.set(id, { version, entries });
    held += weight(entries);
    while (held > maxEntries) remove(cache.keys().next().value!);
  };
  const hitAt = (id: number, version: number) => {
    const hit = cache.get(id);
    if (!hit || hit.version !== version) return undefined;
    cache.delete(id); // refresh recency
    cache.set(id, hit);
    return hit.entries;
  };
  const entriesIn = async (tx: Queryable, id: number) => {
    const version = await dataVersion(tx, id);
    if (version === undefined) return { version: -1, entries: [] };
    const hit = hitAt(id, version);
    if (hit) return { version, entries: hit };
    const entries = await loadEntries(tx, id);
    set(id, version, entries);
    return { version, entries };
  };
  return {
    async entries(db, id) {
      const version = await dataVersion(db, id);
      if (version === undefined) return [];
      const hit = hitAt(id, version);
      if (hit) return hit;
      // Version and rows are read in one transaction so they always belong together.
      return (await db.transaction((tx) => entriesIn(tx, id))).entries;
    },
    entriesIn,
    peek(id, version) {
      const hit = cache.get(id);
      return hit && hit.version === version ? hit.entries : undefined;
    },
    set,
    drop: remove,
    holds: (count) => Math.max(1, count) <= maxEntries,
    holdsDataSet: async (db, dataSourceId) => Math.max(1, await countEntriesUpTo(db, dataSourceId, maxEntries + 1)) <= maxEntries,
  };
}
