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

interface State {
  counts: Map<string, number>;
  building: Map<string, Promise<void>>;
}

const states = new WeakMap<ServerContext, State>();

function stateOf(ctx: ServerContext): State {
  let state = states.get(ctx);
  if (!state) states.set(ctx, (state = { counts: new Map(), building: new Map() }));
  return state;
}

export function noteIndexablePaths(ctx: ServerContext, dataSourceId: number, paths: ReadonlySet<string>, indexed: ReadonlySet<string>): void {
  const after = ctx.limits.autoIndexAfter ?? 50;
  if (after <= 0) return;
  const state = stateOf(ctx);
  for (const path of paths) {
    if (indexed.has(path)) continue;
    const key = `${dataSourceId}:${path}`;
    if (state.building.has(key)) continue;
    if (state.counts.size >= MAX_COUNTED && !state.counts.has(key)) state.counts.clear();
    const count = (state.counts.get(key) ?? 0) + 1;
    state.counts.set(key, count);
    if (count < after) continue;
    state.counts.delete(key);
    const build = buildAuto(ctx, dataSourceId, path).finally(() => state.building.delete(key));
    state.building.set(key, build);
  }
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

/** Resolves when the automatic indexes being built now are done (tests, shutdown). */
export async function settleAutoIndexes(ctx: ServerContext): Promise<void> {
  await Promise.all([...stateOf(ctx).building.values()]);
}
