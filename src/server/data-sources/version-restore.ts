import type { Queryable } from '../db/database.js';
import { HttpError } from '../http/errors.js';
import { assertCallerLiveIn, authorize, type Caller } from './access.js';
import { bumpDataVersion, resolveDataSource, takeSnapshot, type Core, type DataSourceRef } from './core.js';
import { deleteAllEntries, insertEntryRow, restoreChangedEntries } from './store/entries.js';
import { findVersion, readSnapshot, type StoredVersion } from './store/versions.js';
import { summarizeDataSet } from './summary.js';
import type { EntryView, VersionRecord } from './types.js';
import { checkPositiveId } from './validate.js';

export interface RestoreResult {
  restored: { versionId: number; count: number };
  /** The snapshot of the data taken just before restoring (restore it to undo). */
  backup: VersionRecord;
}

/**
 * `POST …/versions/:versionId/restore`: the data source's entries become exactly the version's (ids and
 * timestamps included); the state before is kept as a version. In one transaction, without loading the data set:
 * a version rebuilt from changes is put back in SQL, rewriting only the entries changed since
 * (store/entries.ts `restoreChangedEntries`); a version older than the change records, from its snapshot.
 */
export async function restoreVersion(core: Core, caller: Caller, ref: DataSourceRef, versionId: number): Promise<RestoreResult> {
  const { ctx } = core;
  const ds = await resolveDataSource(ctx.db, ref, caller);
  for (const op of ['insert', 'update', 'delete'] as const) authorize(ds, op, caller);
  checkPositiveId(versionId, 'versionId');
  const result = await ctx.db.transaction(async (tx) => {
    const version = await findVersion(tx, ds.id, versionId);
    if (!version) throw new HttpError(404, 'VERSION_NOT_FOUND', `Version ${versionId} not found in data source ${ds.id}`);
    const summary = await summarizeDataSet(core, tx, ds);
    const backUp = () => takeSnapshot(core, tx, ds, summary, 'restore', caller);
    let count: number;
    let backupId: number;
    if (version.dataVersion !== null) {
      // Rewritten before the backup version is taken: taking it may prune the version restored and its records.
      count = await restoreFromChanges(tx, ds.id, version.dataVersion, summary.count);
      backupId = await backUp();
    } else {
      // Read before the backup version is taken (it may prune the snapshot), written after (so the writes are recorded for it).
      const entries = await readSnapshotEntries(tx, version, versionId);
      backupId = await backUp();
      count = await writeSnapshotEntries(tx, ds.id, entries, ctx.nowIso());
    }
    await bumpDataVersion(tx, ds.id);
    const { dataVersion: _, ...backup } = (await findVersion(tx, ds.id, backupId))!;
    await assertCallerLiveIn(tx, ctx.db.dialect, caller);
    return { count, backup };
  });
  return { restored: { versionId, count: result.count }, backup: result.backup };
}

async function restoreFromChanges(tx: Queryable, dataSourceId: number, dataVersion: number, countBefore: number): Promise<number> {
  const { deleted, inserted } = await restoreChangedEntries(tx, dataSourceId, dataVersion);
  return countBefore - deleted + inserted;
}

/** The entries of a version taken before the change records (its snapshot: one JSON text), oldest id first. */
async function readSnapshotEntries(tx: Queryable, version: StoredVersion, versionId: number): Promise<EntryView[]> {
  const text = await readSnapshot(tx, version.data.entries.key);
  if (text === undefined) throw new HttpError(404, 'VERSION_NOT_FOUND', `The snapshot of version ${versionId} is gone`);
  return (JSON.parse(text) as EntryView[]).sort((a, b) => a.id - b.id);
}

/** The snapshot's entries replace every entry. */
async function writeSnapshotEntries(tx: Queryable, dataSourceId: number, entries: readonly EntryView[], now: string): Promise<number> {
  await deleteAllEntries(tx, dataSourceId);
  for (const e of entries)
    await insertEntryRow(tx, dataSourceId, { id: e.id, data: JSON.stringify(e.data), order: e.order, now, createdAt: e.createdAt, updatedAt: e.updatedAt });
  return entries.length;
}
