import type { ServerContext } from '../context.js';
import { createPathIndex, listIndexes } from './indexes.js';

/**
 * Automatic indexes (indexes.ts): each instance counts, per data source and data path, the translated selects
 * that test the path in `where` or order by it without an index; at `limits.autoIndexAfter` (default 50) it
 * builds the path's index in the background, unless the data source already has
 * `limits.autoIndexesPerDataSource` (default 3) automatic ones. Counts live in memory (at most MAX_COUNTED
 * keys; past that they start over), so a restart starts them over.
 */
const MAX_COUNTED = 10_000;

/** The counts and builds of one backend's data source service (core.ts builds it with the service). */
export interface AutoIndexes {
  /** Counts a translated select's indexable paths, building a path's index once it was queried often. */
  note(dataSourceId: number, paths: ReadonlySet<string>, indexed: ReadonlySet<string>): void;
  /** Resolves when the automatic indexes being built now are done (tests, shutdown). */
  settled(): Promise<void>;
}

export function createAutoIndexes(ctx: ServerContext): AutoIndexes {
  const counts = new Map<string, number>();
  const building = new Map<string, Promise<void>>();
  return {
    note(dataSourceId, paths, indexed) {
      const after = ctx.limits.autoIndexAfter ?? 50;
      if (after <= 0) return;
      for (const path of paths) {
        if (indexed.has(path)) continue;
        const key = `${dataSourceId}:${path}`;
        if (building.has(key)) continue;
        if (counts.size >= MAX_COUNTED && !counts.has(key)) counts.clear();
        const count = (counts.get(key) ?? 0) + 1;
        counts.set(key, count);
        if (count < after) continue;
        counts.delete(key);
        const build = buildAuto(ctx, dataSourceId, path).finally(() => building.delete(key));
        building.set(key, build);
      }
    },
    settled: async () => {
      await Promise.all([...building.values()]);
    },
  };
}

async function buildAuto(ctx: ServerContext, dataSourceId: number, path: string): Promise<void> {
  try {
    const rows = await listIndexes(ctx.db, dataSourceId);
    if (rows.some((row) => row.path === path)) return;
    if (rows.filter((row) => row.origin === 'auto').length >= (ctx.limits.autoIndexesPerDataSource ?? 3)) return;
    await createPathIndex(ctx, dataSourceId, path, 'auto');
  } catch (error) {
    // The query path never depends on an index: a failed build is reported and tried again after more queries.
    console.warn(`automatic index of "${path}" on data source ${dataSourceId} failed: ${(error as Error).message}`);
  }
}
