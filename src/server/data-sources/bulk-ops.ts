import type { Queryable } from '../db/database.js';
import { HttpError } from '../http/errors.js';
import { checkFilterFields } from '../http/nesting.js';
import { assertCallerLiveIn, authorize, filterColumns, hasColumnFilter, type Caller, type Grant } from './access.js';
import { bumpDataVersion, emitLogs, resolveDataSource, takeSnapshot, writeEntryLogs, type Core, type DataSourceRef } from './core.js';
import { advanceSummary, summarizeDataSet } from './summary.js';
import { deleteTranslates, entriesMatching, SqlMatchFailed } from './sql-delete.js';
import { dataVersion } from './store/data-sources.js';
import { compileWhere, runQuery, validateQuery } from './engine.js';
import { deleteAllEntries, deleteEntriesByIds, insertEntryRow, insertEntryRows } from './store/entries.js';
import { changesAfter } from './store/changes.js';
import { findVersion, listVersions, readSnapshot } from './store/versions.js';
import { rebuildVersion } from './versions.js';
import type { DataSourceRecord, EntryRecord, EntryView, VersionRecord } from './types.js';
import { checkEntryData, checkPositiveId } from './validate.js';

/** Whole-data-set operations: import/truncate, query (select/delete), versions and restore (commit: commit.ts). */

export const withGrant = (entries: readonly EntryRecord[], grant: Grant): readonly EntryRecord[] =>
  hasColumnFilter(grant) ? entries.map((e) => ({ ...e, data: filterColumns(e.data, grant) })) : entries;

export async function insertMany(
  tx: Queryable,
  ds: DataSourceRecord,
  items: readonly { data: Record<string, unknown>; order: number }[],
  now: string,
): Promise<EntryRecord[]> {
  const ids = await insertEntryRows(
    tx,
    ds.id,
    items.map((item) => ({ data: JSON.stringify(item.data), order: item.order })),
    now,
  );
  return items.map(({ data, order }, i) => ({ id: ids[i]!, dataSourceId: ds.id, data, order, createdAt: now, updatedAt: now }));
}

/** `POST .../data`: replaces the entries (or appends with `append`); `[]` without append truncates. */
export async function importEntries(core: Core, caller: Caller, ref: DataSourceRef, input: unknown, append: boolean): Promise<void> {
  const { ctx } = core;
  const ds = await resolveDataSource(ctx.db, ref, caller);
  if (!Array.isArray(input)) throw new HttpError(400, 'INVALID_FIELD', 'Field "entries" must be an array of objects');
  const rows = input.map((e, i) => checkEntryData(e, `entries[${i}]`));
  // Appending nothing still needs the insert right (else it would tell anyone which data sources exist).
  if (rows.length > 0 || append) authorize(ds, 'insert', caller);
  if (!append) authorize(ds, 'delete', caller);
  if (append && rows.length === 0) return;
  // The data set is never loaded: its summary (count, columns, next order) is what the version and an append need.
  const result = await ctx.db.transaction(async (tx) => {
    const state = await summarizeDataSet(core, tx, ds);
    await takeSnapshot(core, tx, ds, state, !append && rows.length === 0 ? 'truncate' : 'import', caller);
    if (!append) await deleteAllEntries(tx, ds.id);
    const base = append ? state.nextOrder : 0;
    const inserted = await insertMany(
      tx,
      ds,
      rows.map((data, i) => ({ data, order: base + i })),
      ctx.nowIso(),
    );
    const version = await bumpDataVersion(tx, ds.id);
    await assertCallerLiveIn(tx, ctx.db.dialect, caller);
    const entries = !append ? inserted : state.entries ? state.entries.concat(inserted) : undefined;
    return { version, entries, state, inserted };
  });
  if (result.entries) core.cache.set(ds.id, result.version, result.entries);
  if (append) advanceSummary(core, ds, result.version, result.inserted, result.state);
}

/** Loads a joined data source (same organization as the parent), checking the caller may read it. */
function joinLoader(core: Core, caller: Caller, parent: DataSourceRecord) {
  return {
    async load(ref: { dataSourceId?: number; dataSourceName?: string }) {
      const target = ref.dataSourceId !== undefined ? { id: ref.dataSourceId } : { name: String(ref.dataSourceName), organizationId: parent.organizationId };
      const ds = await resolveDataSource(core.ctx.db, target, caller);
      if (ds.organizationId !== parent.organizationId) throw new HttpError(404, 'DATA_SOURCE_NOT_FOUND', `Data source ${ds.id} not found`);
      const grant = authorize(ds, 'select', caller);
      return withGrant(await core.cache.entries(core.ctx.db, ds.id), grant);
    },
  };
}

export type QueryResponse = { entries: unknown[]; pagination?: { total: number; limit: number; offset: number } } | { deletedCount: number };

/** `POST .../data/query`: select (where, order, pagination, attributes, aggregate, join) or delete. */
export async function queryEntries(core: Core, caller: Caller, ref: DataSourceRef, input: unknown): Promise<QueryResponse> {
  const { ctx } = core;
  const ds = await resolveDataSource(ctx.db, ref, caller);
  // Before any recursive code sees them (the service is also called by app actions, without a parsed body).
  checkFilterFields(input, ctx.limits.filterDepth, ['where', 'aggregate', 'join']);
  const body = validateQuery(input ?? {});
  if (body.type === 'delete') {
    // The where sees only the columns the delete rule shows (it cannot probe hidden ones).
    const grant = authorize(ds, 'delete', caller);
    const test = compileWhere(body.where ?? {});
    // The database finds the matches when its answer is exact and no column is hidden; the JS evaluator goes
    // through the data set when the entry cache holds it anyway, or when the database refuses the statement.
    const bySql = !hasColumnFilter(grant) && deleteTranslates(body.where);
    const run = (useSql: boolean) =>
      ctx.db.transaction(async (tx) => {
        const current = (await dataVersion(tx, ds.id)) ?? -1;
        const cached = core.cache.peek(ds.id, current);
        const state = useSql && !cached ? undefined : cached ? { version: current, entries: cached } : await core.cache.entriesIn(tx, ds.id);
        let matches: { id: number; data: Record<string, unknown> }[];
        if (state) {
          const visible = withGrant(state.entries, grant);
          matches = state.entries.filter((_, i) => test(visible[i]!));
        } else matches = (await entriesMatching(tx, ctx.db.dialect, ds.id, body.where))!;
        if (matches.length === 0) return undefined;
        const summary = state ? undefined : await summarizeDataSet(core, tx, ds);
        await takeSnapshot(core, tx, ds, state ?? summary!, 'delete', caller);
        const ids = new Set(matches.map((e) => e.id));
        if (matches.length === (state ? state.entries.length : summary!.count)) await deleteAllEntries(tx, ds.id);
        else await deleteEntriesByIds(tx, ds.id, [...ids]);
        const version = await bumpDataVersion(tx, ds.id);
        const logs = await writeEntryLogs(
          core,
          tx,
          ds,
          caller,
          matches.map((e) => ({ type: 'dataSource.entry.delete' as const, entryId: e.id, columns: Object.keys(e.data) })),
        );
        await assertCallerLiveIn(tx, ctx.db.dialect, caller);
        return { version, logs, next: state?.entries.filter((e) => !ids.has(e.id)), count: matches.length };
      });
    let result: Awaited<ReturnType<typeof run>>;
    try {
      result = await run(bySql);
    } catch (error) {
      if (!(error instanceof SqlMatchFailed)) throw error;
      result = await run(false);
    }
    if (!result) return { deletedCount: 0 };
    if (result.next) core.cache.set(ds.id, result.version, result.next);
    emitLogs(core, result.logs);
    return { deletedCount: result.count };
  }
  const grant = authorize(ds, 'select', caller);
  const entries = withGrant(await core.cache.entries(ctx.db, ds.id), grant);
  return runQuery(entries as EntryRecord[], body, joinLoader(core, caller, ds), {
    bytes: ctx.limits.aggregateBytes,
    timeoutMs: ctx.limits.aggregateTimeoutMs,
    depth: ctx.limits.bodyDepth,
  });
}

export async function versionsOf(core: Core, caller: Caller, ref: DataSourceRef): Promise<VersionRecord[]> {
  const ds = await resolveDataSource(core.ctx.db, ref, caller);
  authorize(ds, 'select', caller);
  return listVersions(core.ctx.db, ds.id);
}

/** The entries of a version: rebuilt from the current entries and the changes after it, or its snapshot (older versions). */
async function snapshotEntries(core: Core, dataSourceId: number, versionId: number): Promise<{ entries: EntryView[] }> {
  return core.ctx.db.transaction(async (tx) => {
    const version = await findVersion(tx, dataSourceId, versionId);
    if (!version) throw new HttpError(404, 'VERSION_NOT_FOUND', `Version ${versionId} not found in data source ${dataSourceId}`);
    if (version.dataVersion === null) {
      const text = await readSnapshot(tx, version.data.entries.key);
      if (text === undefined) throw new HttpError(404, 'VERSION_NOT_FOUND', `The snapshot of version ${versionId} is gone`);
      return { entries: JSON.parse(text) as EntryView[] };
    }
    const state = await core.cache.entriesIn(tx, dataSourceId);
    return { entries: rebuildVersion(dataSourceId, state.entries, await changesAfter(tx, dataSourceId, version.dataVersion)) };
  });
}

export interface RestoreResult {
  restored: { versionId: number; count: number };
  /** The snapshot of the data taken just before restoring (restore it to undo). */
  backup: VersionRecord;
}

/** The data source's entries become exactly the snapshot's (ids included); the state before is kept as a version. */
export async function restoreVersion(core: Core, caller: Caller, ref: DataSourceRef, versionId: number): Promise<RestoreResult> {
  const { ctx } = core;
  const ds = await resolveDataSource(ctx.db, ref, caller);
  for (const op of ['insert', 'update', 'delete'] as const) authorize(ds, op, caller);
  checkPositiveId(versionId, 'versionId');
  const { entries } = await snapshotEntries(core, ds.id, versionId);
  const result = await ctx.db.transaction(async (tx) => {
    const state = await core.cache.entriesIn(tx, ds.id);
    const backupId = await takeSnapshot(core, tx, ds, state, 'restore', caller);
    await deleteAllEntries(tx, ds.id);
    const now = ctx.nowIso();
    const next: EntryRecord[] = [];
    for (const e of [...entries].sort((a, b) => a.id - b.id)) {
      await insertEntryRow(tx, ds.id, { id: e.id, data: JSON.stringify(e.data), order: e.order, now, createdAt: e.createdAt, updatedAt: e.updatedAt });
      next.push({ id: e.id, dataSourceId: ds.id, data: e.data, order: e.order, createdAt: e.createdAt, updatedAt: e.updatedAt });
    }
    const version = await bumpDataVersion(tx, ds.id);
    const { dataVersion: _, ...backup } = (await findVersion(tx, ds.id, backupId))!;
    await assertCallerLiveIn(tx, ctx.db.dialect, caller);
    return { version, next, backup };
  });
  core.cache.set(ds.id, result.version, result.next);
  return { restored: { versionId, count: result.next.length }, backup: result.backup };
}
