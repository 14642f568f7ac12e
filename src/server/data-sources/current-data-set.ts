import type { Grant } from './access.js';
import type { Core } from './core.js';
import { keepEntryPages, type EntryPages } from './entry-pages.js';
import { dataVersion } from './store/data-sources.js';
import type { EntryRecord } from './types.js';

/**
 * The data set as it is now, for an answer that holds all of it: the cached entries when the entry cache holds
 * this version, else its pages (shaped as a commit or a select answers them, columns the grant hides left out),
 * kept by the database in one transaction, to be streamed (docs/data-sources.md, "Streamed answers"). A data source
 * deleted meanwhile has no entries.
 */
export async function currentDataSet(
  core: Core,
  dataSourceId: number,
  grant: Grant,
  shape: 'commit' | 'select',
): Promise<{ entries: readonly EntryRecord[] } | { pages: EntryPages }> {
  return core.ctx.db.transaction(async (tx) => {
    const version = await dataVersion(tx, dataSourceId);
    const cached = version === undefined ? [] : core.cache.peek(dataSourceId, version);
    return cached ? { entries: cached } : { pages: await keepEntryPages(tx, core.ctx.db.dialect, dataSourceId, grant, { shape }) };
  });
}
