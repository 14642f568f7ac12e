import type { ServerContext } from '../context.js';
import { createPathIndex, indexLimitPassed, listIndexes, type IndexGate } from './indexes.js';
import { findDataSourceById } from './store/data-sources.js';
import { countEntriesUpTo } from './store/entries.js';

/**
 * Automatic indexes (indexes.ts): each instance counts, per data source and data path, the translated selects
 * that test the path in `where` or order by it without an index; at `limits.autoIndexAfter` (default 50) it
 * builds the path's index in the background, unless the data source already has
 * `limits.autoIndexesPerDataSource` (default 3) automatic ones. Counts live in memory (at most MAX_COUNTED
 * keys; past that they start over), so a restart starts them over. A scan of the whole data source (an
 * aggregation grouping by the path) counts as one query per `limits.autoIndexScanRows` (default 10,000) of its
 * entries: the index is worth building after one `$group` over 500,000 entries as after 50 small selects.
 */
const MAX_COUNTED = 10_000;
/** How long after a scan's answer its data source is counted (noteScan). */
const WEIGH_AFTER_MS = 100;

/** The counts and builds of one backend's data source service (core.ts builds it with the service). */
export interface AutoIndexes {
  /** Counts a translated select's indexable paths, building a path's index once it was queried often. */
  note(dataSourceId: number, paths: ReadonlySet<string>, indexed: ReadonlySet<string>, weight?: number): void;
  /**
   * Counts a statement that read every entry of the data source (a grouped path) by the entries it read: the
   * data source is counted (up to what the weight needs, in the background) after the answer is out.
   */
  noteScan(dataSourceId: number, path: string, indexed: ReadonlySet<string>): void;
  /** Resolves when the automatic indexes being built now are done (tests, shutdown). */
  settled(): Promise<void>;
  /**
   * Stops counting (registered on the server's close, before the database closes): counts not started yet are
   * dropped, and it resolves once a count or build under way is over.
   */
  close(): Promise<void>;
}

export function createAutoIndexes(ctx: ServerContext, gate: IndexGate): AutoIndexes {
  const counts = new Map<string, number>();
  const building = new Map<string, Promise<void>>();
  /** Counts pending, by `dataSourceId:path`: one at a time per path; scans noted meanwhile share its weight. */
  const weighing = new Map<string, { done: Promise<void>; scans: number }>();
  const after = () => ctx.limits.autoIndexAfter ?? 50;
  let closed = false;
  const auto: AutoIndexes = {
    note(dataSourceId, paths, indexed, weight = 1) {
      if (after() <= 0 || closed) return;
      for (const path of paths) {
        if (indexed.has(path)) continue;
        const key = `${dataSourceId}:${path}`;
        if (building.has(key)) continue;
        if (counts.size >= MAX_COUNTED && !counts.has(key)) counts.clear();
        const count = (counts.get(key) ?? 0) + weight;
        counts.set(key, count);
        if (count < after()) continue;
        counts.delete(key);
        const build = gate(() => buildAuto(ctx, dataSourceId, path)).finally(() => building.delete(key));
        building.set(key, build);
      }
    },
    noteScan(dataSourceId, path, indexed) {
      const key = `${dataSourceId}:${path}`;
      if (after() <= 0 || closed || indexed.has(path) || building.has(key)) return;
      const pending = weighing.get(key);
      if (pending) return void pending.scans++;
      const rowsPerQuery = Math.max(1, ctx.limits.autoIndexScanRows ?? 10_000);
      // Counting stops where the weight would reach the threshold: at most `after * rowsPerQuery` index entries read.
      // A moment later: on SQLite the count and a build run on the server's thread (better-sqlite3 is synchronous, so
      // a build holds every request of the instance), and the answer that counted goes out first (an immediate
      // was too soon: the response was still being written).
      const entry = { done: Promise.resolve(), scans: 1 };
      entry.done = new Promise<void>((resolve) => setTimeout(resolve, WEIGH_AFTER_MS))
        .then(async () => {
          // A server closing meanwhile: its database is about to close, so nothing is counted.
          if (closed) return;
          const rows = await countEntriesUpTo(ctx.db, dataSourceId, after() * rowsPerQuery);
          weighing.delete(key);
          auto.note(dataSourceId, new Set([path]), indexed, entry.scans * Math.max(1, Math.floor(rows / rowsPerQuery)));
        })
        .catch((error: Error) => console.warn(`automatic index of "${path}" on data source ${dataSourceId}: counting failed: ${error.message}`))
        .finally(() => {
          if (weighing.get(key) === entry) weighing.delete(key);
        });
      weighing.set(key, entry);
    },
    settled: async () => {
      await Promise.all([...weighing.values()].map((entry) => entry.done));
      await Promise.all([...building.values()]);
    },
    close: () => {
      closed = true;
      return auto.settled();
    },
  };
  return auto;
}

async function buildAuto(ctx: ServerContext, dataSourceId: number, path: string): Promise<void> {
  try {
    const rows = await listIndexes(ctx.db, dataSourceId);
    if (rows.some((row) => row.path === path)) return;
    if (rows.filter((row) => row.origin === 'auto').length >= (ctx.limits.autoIndexesPerDataSource ?? 3)) return;
    // Every index costs every tenant's writes: none past limits.pathIndexes / pathIndexesPerOrganization.
    const ds = await findDataSourceById(ctx.db, dataSourceId);
    if (!ds || (await indexLimitPassed(ctx, ds.organizationId, 1))) return;
    await createPathIndex(ctx, dataSourceId, path, 'auto');
  } catch (error) {
    // The query path never depends on an index: a failed build is reported and tried again after more queries.
    console.warn(`automatic index of "${path}" on data source ${dataSourceId} failed: ${(error as Error).message}`);
  }
}
