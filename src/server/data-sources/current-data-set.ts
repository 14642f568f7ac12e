import type { KeptRows } from '../db/database.js';
import type { Core } from './core.js';
import { dataVersion } from './store/data-sources.js';
import { keepEntryRows, type EntryTuple } from './store/entries.js';
import type { EntryRecord } from './types.js';

/**
 * The data set as it is now, for an answer that holds all of it: the cached entries when the entry cache holds
 * this version, else the rows kept by the database in one transaction, to be streamed (docs/data-sources.md,
 * "Streamed answers"). A data source deleted meanwhile has no entries.
 */
export async function currentDataSet(core: Core, dataSourceId: number): Promise<{ entries: readonly EntryRecord[] } | { kept: KeptRows<EntryTuple> }> {
  return core.ctx.db.transaction(async (tx) => {
    const version = await dataVersion(tx, dataSourceId);
    const cached = version === undefined ? [] : core.cache.peek(dataSourceId, version);
    return cached ? { entries: cached } : { kept: await keepEntryRows(tx, dataSourceId) };
  });
}
