import { authorize, type Caller } from './access.js';
import { withGrant } from './access.js';
import { byDefaultOrder, resolveDataSource, type Core, type DataSourceRef } from './core.js';
import { currentDataSet } from './current-data-set.js';
import type { EntryPages } from './entry-pages.js';
import type { EntryRecord } from './types.js';

/**
 * `GET …/data` without `limit` / `offset`: every entry in the default order, as a select of every entry answers
 * them (columns a rule hides are left out). A data set the entry cache does not hold is answered in pages
 * (docs/data-sources.md, "Streamed answers"): `pages` must be read to the end or closed.
 */
export async function listAllEntries(core: Core, caller: Caller, ref: DataSourceRef): Promise<{ entries: readonly EntryRecord[] } | { pages: EntryPages }> {
  const ds = await resolveDataSource(core.ctx.db, ref, caller);
  const grant = authorize(ds, 'select', caller);
  const state = await currentDataSet(core, ds.id, grant, 'select');
  if ('pages' in state) return state;
  return { entries: withGrant([...state.entries].sort(byDefaultOrder), grant) };
}
