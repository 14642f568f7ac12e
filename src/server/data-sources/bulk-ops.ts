import type { Queryable } from '../db/database.js';
import { HttpError } from '../http/errors.js';
import { checkFilterFields } from '../http/nesting.js';
import { assertCallerLiveIn, authorize, hasColumnFilter, withGrant, type Caller } from './access.js';
import { bumpDataVersion, emitLogs, resolveDataSource, takeSnapshot, writeEntryLogs, type Core, type DataSourceRef } from './core.js';
import { advanceSummary, summarizeDataSet } from './summary.js';
import { deleteTranslates, entriesMatching, SqlMatchFailed } from './sql-delete.js';
import { dataVersion } from './store/data-sources.js';
import { compileWhere, runQuery, validateQuery } from './engine.js';
import { compileQuery } from './query/compile.js';
import { joinedEntries } from './scan-joined.js';
import { candidatesCond, scanSelect } from './scan-select.js';
import { outsideBudget, startBudget } from './query/filter-entries.js';
import { tooManyRows } from './query/answer-rows.js';
import type { JoinLoader } from './query/types.js';
import { deleteAllEntries, deleteEntriesByIds, insertEntryRows } from './store/entries.js';
import { deleteBudget, deleteMatches, scanMatches } from './scan-delete.js';
import { listVersions } from './store/versions.js';
import { indexedPaths } from './indexes.js';
import type { DataSourceRecord, EntryRecord, VersionRecord } from './types.js';
import { checkEntryData } from './validate.js';

/** Whole-data-set operations: import/truncate, query (select/delete), versions (version data and restore: version-data.ts, version-restore.ts; commit: commit.ts). */

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
function joinLoader(core: Core, caller: Caller, parent: DataSourceRecord): JoinLoader {
  return {
    async load(ref, where, budget = startBudget(core.ctx.limits.aggregateTimeoutMs)) {
      const target = ref.dataSourceId !== undefined ? { id: ref.dataSourceId } : { name: String(ref.dataSourceName), organizationId: parent.organizationId };
      const ds = await resolveDataSource(core.ctx.db, target, caller);
      if (ds.organizationId !== parent.organizationId) throw new HttpError(404, 'DATA_SOURCE_NOT_FOUND', `Data source ${ds.id} not found`);
      const grant = authorize(ds, 'select', caller);
      // A joined data source larger than the entry cache: read in pages, only its matches kept (scan-joined.ts).
      const picked = where && (await joinedEntries(core, ds.id, grant, where, candidatesCond(where.source, grant), budget));
      return picked ?? withGrant(await outsideBudget(budget, () => core.cache.entries(core.ctx.db, ds.id)), grant);
    },
  };
}

export type QueryResponse = { entries: unknown[]; pagination?: { total: number; limit: number; offset: number } } | { deletedCount: number };

/** `POST .../data/query`: select (where, order, pagination, attributes, aggregate, join) or delete. */
/**
 * `attempted`: when the request's query began (service.ts: before the database tried it, sql-query.ts). A query the
 * database gave up on has only what is left of its budget here, so one request costs one limits.aggregateTimeoutMs.
 */
export async function queryEntries(core: Core, caller: Caller, ref: DataSourceRef, input: unknown, attempted?: number): Promise<QueryResponse> {
  const { ctx } = core;
  const started = attempted ?? Date.now();
  // What the database's attempt spent (none when it did not try): a 422 names it (queryTimeout).
  const databaseMs = Date.now() - started;
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
    // A scan reads only the entries that meet the part of the `where` the database can test (scan-select.ts).
    const candidates = bySql ? null : candidatesCond(body.where, grant);
    const indexed = candidates ? await indexedPaths(ctx.db, ds.id) : new Set<string>();
    const run = (useSql: boolean, scanCandidates = candidates) =>
      ctx.db.transaction(async (tx) => {
        const current = (await dataVersion(tx, ds.id)) ?? -1;
        const cached = core.cache.peek(ds.id, current);
        // Read whole only when the entry cache holds it (or will: the next request finds it there).
        const load = !useSql && !cached && (await core.cache.holdsDataSet(tx, ds.id));
        const state = cached ? { version: current, entries: cached } : load ? await core.cache.entriesIn(tx, ds.id) : undefined;
        let matches: { id: number; data: Record<string, unknown> }[];
        if (state) {
          matches = deleteMatches(state.entries, withGrant(state.entries, grant), test, deleteBudget(ctx.limits.aggregateTimeoutMs));
        } else if (useSql) matches = (await entriesMatching(tx, ctx.db.dialect, ds.id, body.where))!;
        else matches = await scanMatches(tx, ctx.db.dialect, ds.id, grant, test, scanCandidates, indexed, ctx.limits.aggregateTimeoutMs);
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
      // The data made the database refuse the statement: the JS evaluator reads every entry.
      result = await run(false, null);
    }
    if (!result) return { deletedCount: 0 };
    if (result.next) core.cache.set(ds.id, result.version, result.next);
    emitLogs(core, result.logs);
    return { deletedCount: result.count };
  }
  const grant = authorize(ds, 'select', caller);
  // A data source too large for the entry cache is scanned in pages, not loaded (scan-select.ts).
  const timeoutMs = ctx.limits.aggregateTimeoutMs;
  const scanned = await scanSelect(core, ds.id, grant, compileQuery(body), joinLoader(core, caller, ds), {
    timeoutMs,
    deadline: started + timeoutMs,
    databaseMs,
  });
  if (scanned) {
    if (!body.aggregate && scanned.entries.length > ctx.limits.queryRows) throw tooManyRows(ctx.limits.queryRows);
    return scanned;
  }
  // What the database's attempt and a scan that gave up spent (joins loaded, pages read: writes came between).
  const scanSpent = Date.now() - started;
  const entries = withGrant(await core.cache.entries(ctx.db, ds.id), grant);
  // The query's budget less what the database's attempt and a scan that gave up spent; loading
  // the data set into the entry cache is not the query's matching and does not count, as before.
  const budget = { timeoutMs, deadline: Date.now() + timeoutMs - scanSpent, databaseMs };
  const result = await runQuery(
    entries as EntryRecord[],
    body,
    joinLoader(core, caller, ds),
    { bytes: ctx.limits.aggregateBytes, timeoutMs, depth: ctx.limits.bodyDepth, rows: ctx.limits.queryRows },
    budget,
  );
  // As the database's and the scan's answers: at most limits.queryRows entries (the data set here is the cache's).
  if (!body.aggregate && result.entries.length > ctx.limits.queryRows) throw tooManyRows(ctx.limits.queryRows);
  return result;
}

export async function versionsOf(core: Core, caller: Caller, ref: DataSourceRef): Promise<VersionRecord[]> {
  const ds = await resolveDataSource(core.ctx.db, ref, caller);
  authorize(ds, 'select', caller);
  return listVersions(core.ctx.db, ds.id);
}
