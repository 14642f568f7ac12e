import { HttpError } from '../http/errors.js';
import { assertCallerLiveIn, authorize, filterColumns, writtenData, type Caller } from './access.js';
import { bumpDataVersion, emitLogs, resolveDataSource, toView, writeEntryLogs, type Core, type DataSourceRef } from './core.js';
import { checkFileName } from './files.js';
import { advanceSummary, readEntryData, summaryAfterEntryWrite } from './summary.js';
import { setOwn } from './query/values.js';
import { pendingWebHooks, runOperationHooks } from './hooks.js';
import { deleteEntryRow, findEntry, insertEntryRow, updateEntryRow } from './store/entries.js';
import { findFile, insertFileRow } from './store/files.js';
import { findOrganization } from './store/admin.js';
import type { EntryRecord, EntryView, FileRecord } from './types.js';
import { checkEntryData, checkPositiveId } from './validate.js';

/** Single-entry operations: read, insert (with files), update (shallow merge), delete, indexes, file download. */

import type { UploadedFile } from '../http/multipart.js';
export type { UploadedFile };

const entryNotFound = (dataSourceId: number, id: number) => new HttpError(404, 'ENTRY_NOT_FOUND', `Entry ${id} not found in data source ${dataSourceId}`);

export async function getEntry(core: Core, caller: Caller, ref: DataSourceRef, id: number): Promise<EntryView> {
  const ds = await resolveDataSource(core.ctx.db, ref, caller);
  const grant = authorize(ds, 'select', caller);
  const entry = await findEntry(core.ctx.db, ds.id, id);
  if (!entry) throw entryNotFound(ds.id, id);
  return toView({ ...entry, data: filterColumns(entry.data, grant) });
}

/**
 * Patches the cache after a single-entry write when it held the previous version (a copy of at most
 * `limits.entryCacheEntries` entries: larger data sources are not cached).
 */
function patchCache(core: Core, dataSourceId: number, version: number, patch: (entries: readonly EntryRecord[]) => EntryRecord[] | undefined): void {
  const previous = core.cache.peek(dataSourceId, version - 1);
  const next = previous && patch(previous);
  if (next) core.cache.set(dataSourceId, version, next);
}

export async function insertEntry(core: Core, caller: Caller, ref: DataSourceRef, input: unknown, files: readonly UploadedFile[] = []): Promise<EntryView> {
  const { ctx } = core;
  const ds = await resolveDataSource(ctx.db, ref, caller);
  authorize(ds, 'insert', caller);
  const fields = { ...checkEntryData(input, 'body') };
  let sent = Object.keys(fields);
  for (const file of files) {
    checkFileName(file.name, file.field);
    if (file.bytes.byteLength > ctx.limits.fileBytes)
      throw new HttpError(413, 'FILE_TOO_LARGE', `File "${file.name}" of field "${file.field}" is larger than ${ctx.limits.fileBytes} bytes`);
  }
  const org = files.length ? await findOrganization(ctx.db, ds.organizationId) : undefined;
  const encrypt = org?.settings.encryption === true;
  // The bytes are written first; if the transaction then fails they are removed again.
  const stored: (Awaited<ReturnType<typeof core.files.save>> & { file: UploadedFile })[] = [];
  try {
    for (const file of files)
      stored.push({ ...(await core.files.save({ organizationId: ds.organizationId, folder: String(ds.id), bytes: file.bytes, encrypt })), file });
    const now = ctx.nowIso();
    const result = await ctx.db.transaction(async (tx) => {
      const urls = new Map<string, { url: string[]; id: number[] }>();
      for (const s of stored) {
        const fileId = await insertFileRow(tx, {
          dataSourceId: ds.id,
          organizationId: ds.organizationId,
          name: s.file.name,
          contentType: s.file.type || 'application/octet-stream',
          size: s.file.bytes.byteLength,
          path: s.path,
          encrypted: s.encrypted,
          iv: s.iv,
          authTag: s.authTag,
          createdAt: now,
        });
        const slot = urls.get(s.file.field) ?? { url: [], id: [] };
        slot.url.push(`${ctx.publicUrl()}/v1/data-sources/${ds.id}/files/${fileId}`);
        slot.id.push(fileId);
        urls.set(s.file.field, slot);
      }
      for (const [field, slot] of urls) {
        setOwn(fields, field, slot.url.length === 1 ? slot.url[0] : slot.url);
        setOwn(fields, `${field}MediaFileId`, slot.id.length === 1 ? slot.id[0] : slot.id);
      }
      sent = Object.keys(fields);
      const data = runOperationHooks(ds, 'insert', fields, core.matcher);
      const id = await insertEntryRow(tx, ds.id, { data: JSON.stringify(data), order: 0, now });
      const version = await bumpDataVersion(tx, ds.id);
      const logs = await writeEntryLogs(core, tx, ds, caller, [{ type: 'dataSource.entry.create', entryId: id, columns: Object.keys(data) }]);
      const entry: EntryRecord = { id, dataSourceId: ds.id, data, order: 0, createdAt: now, updatedAt: now };
      await assertCallerLiveIn(tx, ctx.db.dialect, caller);
      return { entry, version, logs };
    });
    patchCache(core, ds.id, result.version, (prev) => prev.concat([result.entry]));
    advanceSummary(core, ds, result.version, [result.entry]);
    emitLogs(core, result.logs);
    core.webhooks.fire(ds, pendingWebHooks(ds, 'insert', result.entry, core.matcher));
    return toView({ ...result.entry, data: writtenData(ds, caller, result.entry.data, sent) });
  } catch (error) {
    await Promise.all(stored.map((s) => core.files.remove(s.path).catch(() => undefined)));
    throw error;
  }
}

export async function updateEntry(core: Core, caller: Caller, ref: DataSourceRef, id: number, input: unknown): Promise<EntryView> {
  const { ctx } = core;
  const ds = await resolveDataSource(ctx.db, ref, caller);
  authorize(ds, 'update', caller);
  const changes = checkEntryData(input, 'body');
  const result = await ctx.db.transaction(async (tx) => {
    const existing = await findEntry(tx, ds.id, id);
    if (!existing) throw entryNotFound(ds.id, id);
    const data = runOperationHooks(ds, 'update', { ...existing.data, ...changes }, core.matcher);
    const now = ctx.nowIso();
    await updateEntryRow(tx, id, { data: JSON.stringify(data), now });
    const version = await bumpDataVersion(tx, ds.id);
    const logs = await writeEntryLogs(core, tx, ds, caller, [{ type: 'dataSource.entry.update', entryId: id, columns: Object.keys(changes) }]);
    await assertCallerLiveIn(tx, ctx.db.dialect, caller);
    const summary = await summaryAfterEntryWrite(core, tx, ds, version, { id, order: existing.order, before: existing.data, after: data });
    return { entry: { ...existing, data, updatedAt: now }, version, logs, summary };
  });
  if (result.summary) core.summaries.set(ds.id, result.summary);
  patchCache(core, ds.id, result.version, (prev) => {
    const next = prev.slice();
    const at = next.findIndex((e) => e.id === id);
    if (at < 0) return undefined; // not the state it should be: reloaded when next needed
    next[at] = result.entry;
    return next;
  });
  emitLogs(core, result.logs);
  core.webhooks.fire(ds, pendingWebHooks(ds, 'update', result.entry, core.matcher));
  return toView({ ...result.entry, data: writtenData(ds, caller, result.entry.data, Object.keys(changes)) });
}

export async function deleteEntry(core: Core, caller: Caller, ref: DataSourceRef, id: number): Promise<void> {
  const { ctx } = core;
  const ds = await resolveDataSource(ctx.db, ref, caller);
  authorize(ds, 'delete', caller);
  const result = await ctx.db.transaction(async (tx) => {
    const existing = await findEntry(tx, ds.id, id);
    if (!existing || !(await deleteEntryRow(tx, ds.id, id))) throw entryNotFound(ds.id, id);
    const version = await bumpDataVersion(tx, ds.id);
    const logs = await writeEntryLogs(core, tx, ds, caller, [{ type: 'dataSource.entry.delete', entryId: id, columns: Object.keys(existing.data) }]);
    await assertCallerLiveIn(tx, ctx.db.dialect, caller);
    const summary = await summaryAfterEntryWrite(core, tx, ds, version, { id, order: existing.order, before: existing.data });
    return { version, logs, summary };
  });
  if (result.summary) core.summaries.set(ds.id, result.summary);
  patchCache(core, ds.id, result.version, (prev) => prev.filter((e) => e.id !== id));
  emitLogs(core, result.logs);
}

function readPath(data: unknown, path: string): unknown {
  let value = data;
  for (const part of path.split('.')) {
    // Own properties only: `constructor`, `__proto__`, `toString` are ordinary (absent) columns.
    if (value === null || typeof value !== 'object' || !Object.hasOwn(value, part)) return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}

/** Distinct values of each column (dots reach nested values; array values count each element). */
export async function getIndexes(core: Core, caller: Caller, ref: DataSourceRef, columns: readonly string[]): Promise<Record<string, unknown[]>> {
  const ds = await resolveDataSource(core.ctx.db, ref, caller);
  const grant = authorize(ds, 'select', caller);
  const shown = columns.map((column) => {
    const root = column.split('.')[0]!;
    return !((grant.include && !grant.include.includes(root)) || grant.exclude?.includes(root));
  });
  // Entries oldest first, from the entry cache or read in pages that are dropped at once (summary.ts).
  const seen = await readEntryData(core, ds.id, () => {
    const maps = columns.map(() => new Map<unknown, unknown>());
    const add = (data: Record<string, unknown>) =>
      columns.forEach((column, i) => {
        if (!shown[i]) return;
        const value = readPath(data, column);
        for (const v of Array.isArray(value) ? value : [value]) {
          if (v === undefined) continue;
          const key = v !== null && typeof v === 'object' ? `json:${JSON.stringify(v)}` : v;
          if (!maps[i]!.has(key)) maps[i]!.set(key, v);
        }
      });
    return { add, result: maps };
  });
  const out: Record<string, unknown[]> = {};
  columns.forEach((column, i) => {
    out[column] = [...seen[i]!.values()];
  });
  return out;
}

export async function readFileOf(core: Core, caller: Caller, ref: DataSourceRef, fileId: unknown): Promise<{ file: FileRecord; bytes: Buffer }> {
  const ds = await resolveDataSource(core.ctx.db, ref, caller);
  authorize(ds, 'select', caller);
  const id = checkPositiveId(fileId, 'fileId');
  const file = await findFile(core.ctx.db, ds.id, id);
  if (!file) throw new HttpError(404, 'FILE_NOT_FOUND', `File ${id} not found in data source ${ds.id}`);
  return { file, bytes: await core.files.read(file) };
}
