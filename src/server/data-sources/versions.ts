import { toView } from './core.js';
import type { ChangeRow } from './store/changes.js';
import type { EntryRecord, EntryView } from './types.js';

/**
 * Rebuilds the entries of a version from the entries now and the undo records of every write since (newest
 * first, as changesAfter returns them): each record puts its entry back as it was before that write, or removes
 * it when the write inserted it. Ranges of fresh inserts are removed last: their ids cannot appear in any older
 * record (they did not exist before), so removing them at the end equals removing them in turn. Oldest id first,
 * as a data source's entries are read. The server no longer calls it (it holds the whole data set and every record
 * since in memory): the database computes versions (store/version-rows.ts); this is the oracle of
 * test/integration/version-data-differential.test.ts and the "before" of test/bench/version-data.bench.ts.
 */
export function rebuildVersion(dataSourceId: number, current: readonly EntryRecord[], changes: readonly ChangeRow[]): EntryView[] {
  const byId = new Map<number, EntryView>();
  for (const e of current) byId.set(e.id, toView(e));
  const ranges: [number, number][] = [];
  for (const change of changes) {
    if (change.last_entry_id !== null && change.last_entry_id !== undefined) {
      ranges.push([change.entry_id, change.last_entry_id]);
      continue;
    }
    if (!change.existed) {
      byId.delete(change.entry_id);
      continue;
    }
    byId.set(change.entry_id, {
      id: change.entry_id,
      dataSourceId,
      data: JSON.parse(change.data ?? '{}') as Record<string, unknown>,
      order: change.sort_order ?? 0,
      createdAt: change.created_at ?? '',
      updatedAt: change.updated_at ?? '',
      deletedAt: null,
    });
  }
  const out = [...byId.values()].sort((a, b) => a.id - b.id);
  if (ranges.length === 0) return out;
  ranges.sort((a, b) => a[0] - b[0]);
  // One pass: both lists are sorted by id.
  const kept: EntryView[] = [];
  let r = 0;
  for (const entry of out) {
    while (r < ranges.length && ranges[r]![1] < entry.id) r++;
    if (r < ranges.length && ranges[r]![0] <= entry.id) continue;
    kept.push(entry);
  }
  return kept;
}
