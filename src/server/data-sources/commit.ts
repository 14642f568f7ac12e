import { createHash } from 'node:crypto';
import { HttpError } from '../http/errors.js';
import { assertCallerLiveIn, authorize, withGrant, type Caller, type Grant } from './access.js';
import { insertMany } from './bulk-ops.js';
import {
  bumpDataVersion,
  byDefaultOrder,
  emitLogs,
  resolveDataSource,
  takeSnapshot,
  toView,
  writeEntryLogs,
  type Core,
  type DataSourceRef,
  type EntryEvent,
} from './core.js';
import { pendingWebHooks, runOperationHooks } from './hooks.js';
import { keepEntryPages, type EntryPages } from './entry-pages.js';
import { findCommitReceipt, insertCommitReceipt, pruneCommitReceipts, type ReceiptKey } from './store/commit-receipts.js';
import { currentDataSet } from './current-data-set.js';
import { countEntries, deleteAllEntries, deleteEntriesByIds, entryDataPage, findEntriesByIds, loadEntries, updateEntryRow } from './store/entries.js';
import { dataVersion } from './store/data-sources.js';
import { SCAN_PAGE } from './scan-select.js';
import type { Queryable } from '../db/database.js';
import { advanceSummary, summarizeDataSet, type DataSetSummary } from './summary.js';
import type { DataSourceRecord, EntryRecord, EntryView } from './types.js';
import { checkCommitBody, type CommitBody } from './validate.js';

/**
 * `POST …/commit`: inserts, updates and removals in one transaction, converging when the client's list is stale
 * (docs/data-sources.md, "Commits that converge"):
 * - an id of `delete` that no longer exists is a no-op;
 * - an update (`{ id, data }`) of an id that no longer exists is not applied and is reported in `errors`
 *   (`ENTRY_NOT_FOUND`, with its index in `entries`), while the rest of the commit applies;
 * - with an `Idempotency-Key`, a commit re-sent by the same token to the same data source with the same body is
 *   applied once: the repeat answers the data set as it is now, with the first answer's `clientIds` and `errors`.
 * A malformed body is still refused whole (400), before anything changes.
 */

/** One update the commit could not apply. */
export interface CommitItemError {
  index: number;
  id: number;
  clientId?: unknown;
  code: 'ENTRY_NOT_FOUND';
  message: string;
}

export interface CommitResult {
  entries?: EntryView[];
  /**
   * Instead of `entries`, with `stream` when the data set is not in memory: the same entries as JSON text in pages,
   * kept by the database as the commit left them (docs/data-sources.md, "Streamed answers"). The caller must read
   * them to the end or `close()` them.
   */
  entryPages?: EntryPages;
  clientIds?: { id: number; clientId: unknown }[];
  errors?: CommitItemError[];
  /** Set when an earlier commit with the same Idempotency-Key was answered again (the route sends a header). */
  replayed?: true;
}

/** How the caller takes the answer. */
export interface CommitAnswerOptions {
  /** Answer a data set that is not in memory as `entryPages` (read after the commit) rather than `entries`. */
  stream?: boolean;
}

/** The commit's Idempotency-Key, if the request sent one. */
export interface CommitIdempotency {
  key: string;
}

/** The part of a commit answer kept in a receipt (the data set itself is answered as it is at each replay). */
type Receipt = Pick<CommitResult, 'clientIds' | 'errors'>;

/**
 * The receipt's key: per data source and token. Callers who share an identity (no token, or a page's client token,
 * which every visitor of the screen holds) also key by the body's hash, so one of them can neither block another's
 * commit with a reused key (409) nor read another's answer (new ids, clientIds) by replaying it.
 */
const receiptKeyOf = (ds: DataSourceRecord, caller: Caller, key: string, hash: string): ReceiptKey => {
  const token = caller.kind === 'token' ? caller.token : null;
  const shared = token === null || token.kind === 'client';
  return { dataSourceId: ds.id, tokenId: token?.id ?? 0, key: shared ? `${key}#${hash}` : key };
};

/** Same body, same hash: the body as parsed, serialized again (key order as sent). */
const hashOf = (input: Record<string, unknown>) => createHash('sha256').update(JSON.stringify(input)).digest('base64url');

const keyReused = () =>
  new HttpError(409, 'IDEMPOTENCY_KEY_REUSED', 'This Idempotency-Key was used for another commit body to this data source: use a new key for a new commit');

/**
 * PostgreSQL's unique violation: the receipt's key was taken by a concurrent commit with the same key (SQLite's
 * single writer runs the two transactions one after the other: the second finds the receipt and replays).
 */
const isDuplicateKey = (error: unknown) => (error as { code?: unknown })?.code === '23505';

export async function commitEntries(
  core: Core,
  caller: Caller,
  ref: DataSourceRef,
  input: Record<string, unknown>,
  idempotency?: CommitIdempotency,
  options: CommitAnswerOptions = {},
): Promise<CommitResult> {
  const { ctx } = core;
  const ds = await resolveDataSource(ctx.db, ref, caller);
  const body = checkCommitBody(input);
  const inserts = body.entries.filter((e) => e.id === undefined);
  const updates = body.entries.filter((e) => e.id !== undefined);
  if (inserts.length) authorize(ds, 'insert', caller);
  if (updates.length) authorize(ds, 'update', caller);
  if (body.delete.length) authorize(ds, 'delete', caller);
  // A commit that sends nothing still replaces (or confirms) the data set: it needs some write right.
  if (!inserts.length && !updates.length && !body.delete.length) authorize(ds, body.append ? 'update' : 'delete', caller);
  const readGrant = body.returnEntries ? authorize(ds, 'select', caller) : {};
  const hash = idempotency ? hashOf(input) : '';
  const receipt = idempotency && { key: receiptKeyOf(ds, caller, idempotency.key, hash), hash };

  /** The data set as it is now (a replay), kept in a transaction when it is not in memory and the answer is streamed. */
  const current = async (): Promise<{ entries?: readonly EntryRecord[]; pages?: EntryPages }> =>
    options.stream ? currentDataSet(core, ds.id, readGrant, 'commit') : { entries: await core.cache.entries(ctx.db, ds.id) };
  /** The data set right after this commit (`entries`, or the `pages` the database kept); a replay reads it as it is now. */
  const answer = async (outcome: Receipt, replayed: boolean, state?: { entries?: readonly EntryRecord[]; pages?: EntryPages }): Promise<CommitResult> => {
    const out: CommitResult = {};
    if (body.returnEntries) {
      const { entries, pages } = state?.entries || state?.pages ? state : await current();
      if (pages) out.entryPages = pages;
      else out.entries = withGrant([...entries!].sort(byDefaultOrder), readGrant).map(toView);
    }
    if (outcome.clientIds?.length) out.clientIds = outcome.clientIds;
    if (outcome.errors?.length) out.errors = outcome.errors;
    if (replayed) out.replayed = true;
    return out;
  };
  const replay = async (): Promise<CommitResult | undefined> => {
    if (!receipt) return undefined;
    const found = await findCommitReceipt(ctx.db, receipt.key);
    if (!found) return undefined;
    if (found.requestHash !== receipt.hash) throw keyReused();
    return answer(found.answer as Receipt, true);
  };

  const earlier = await replay();
  if (earlier) return earlier;
  let result: Awaited<ReturnType<typeof applyCommit>>;
  try {
    result = await applyCommit(core, caller, ds, body, receipt, options.stream ? readGrant : undefined);
  } catch (error) {
    // A commit with the same key that committed while this one ran: answer as a repeat of it.
    if (receipt && isDuplicateKey(error)) {
      const again = await replay();
      if (again) return again;
    }
    throw error;
  }
  if (result.replayed) {
    if (result.replayed.requestHash !== receipt!.hash) throw keyReused();
    return answer(result.replayed.answer as Receipt, true);
  }
  const applied = result.applied;
  try {
    if (applied.next) core.cache.set(ds.id, applied.version, applied.next);
    if (applied.appendedOnly) advanceSummary(core, ds, applied.version, applied.inserted, applied.appendedOnly);
    emitLogs(core, applied.logs);
    if (body.runHooks.includes('insert')) for (const e of applied.inserted) core.webhooks.fire(ds, pendingWebHooks(ds, 'insert', e, core.matcher));
    if (body.runHooks.includes('update')) for (const e of applied.changed) core.webhooks.fire(ds, pendingWebHooks(ds, 'update', e, core.matcher));
    // The state this commit produced, not read again: a data source too large for the entry cache is loaded once.
    return await answer(applied.outcome, false, { entries: applied.next, pages: applied.pages });
  } catch (error) {
    await applied.pages?.close();
    throw error;
  }
}

/**
 * The transaction of a commit: the receipt (if any) is checked and written in it, so a commit applies once. With
 * `stream` (the caller's read grant), an answer not in memory is kept as pages.
 */
async function applyCommit(
  core: Core,
  caller: Caller,
  ds: DataSourceRecord,
  body: CommitBody,
  receipt: { key: ReceiptKey; hash: string } | undefined,
  stream: Grant | undefined,
) {
  const { ctx } = core;
  const runInsertHooks = body.runHooks.includes('insert');
  const runUpdateHooks = body.runHooks.includes('update');
  return ctx.db.transaction(async (tx) => {
    if (receipt) {
      const found = await findCommitReceipt(tx, receipt.key);
      if (found) return { replayed: found } as const;
    }
    // An append (`append: true`) reads only the entries it names, unless the entry cache holds them all. A full
    // replacement also needs the ids of every entry it leaves out (and their columns, for the delete log): a data
    // set the entry cache holds (or will) is loaded whole, a larger one is read in pages (`unsentEntries`).
    const appendSummary = body.append ? await summarizeDataSet(core, tx, ds) : undefined;
    let summary: DataSetSummary | undefined = appendSummary;
    let state = appendSummary?.entries && { version: appendSummary.version, entries: appendSummary.entries };
    /** A full replacement of a data set too large for the cache: the entries it leaves out, with their columns. */
    let left: Map<number, string[]> | undefined;
    if (!body.append) {
      const version = (await dataVersion(tx, ds.id)) ?? -1;
      const cached = core.cache.peek(ds.id, version);
      const counted = cached ? undefined : await countEntries(tx, ds.id);
      if (cached) state = { version, entries: cached };
      else if (core.cache.holds(counted!.count)) state = await core.cache.entriesIn(tx, ds.id);
      else {
        // One read of the rows gives both what is left out and, for the version, the undeclared columns.
        const sent = new Set(body.entries.flatMap((e) => (e.id === undefined ? [] : [e.id])));
        const scanned = await unsentEntries(tx, ds.id, sent, !ds.columns);
        left = scanned.left;
        summary = { version, count: counted!.count, columns: ds.columns ?? scanned.seen, nextOrder: (counted!.maxOrder ?? -1) + 1 };
      }
    }
    const byId = new Map<number, EntryRecord>();
    const named = state
      ? state.entries
      : await findEntriesByIds(tx, ds.id, [...body.entries.flatMap((e) => (e.id === undefined ? [] : [e.id])), ...(body.append ? body.delete : [])]);
    for (const e of named) byId.set(e.id, e);
    // Updates of entries removed since the client listed them: reported, not applied.
    const errors: CommitItemError[] = [];
    body.entries.forEach((e, i) => {
      if (e.id === undefined || byId.has(e.id)) return;
      errors.push({
        index: i,
        id: e.id,
        ...(e.clientId !== undefined ? { clientId: e.clientId } : {}),
        code: 'ENTRY_NOT_FOUND',
        message: `entries[${i}].id: entry ${e.id} not found in data source ${ds.id} (deleted since it was listed?); this update was not applied`,
      });
    });
    const updates = body.entries.filter((e) => e.id !== undefined && byId.has(e.id));
    const sentIds = new Set(updates.map((e) => e.id!));
    /** Columns of each removed entry, for its delete log record. */
    const removedColumns = new Map<number, string[]>();
    if (body.append) for (const id of body.delete) if (byId.has(id)) removedColumns.set(id, Object.keys(byId.get(id)!.data));
    if (!body.append && state) for (const e of state.entries) if (!sentIds.has(e.id)) removedColumns.set(e.id, Object.keys(e.data));
    if (left) for (const [id, columns] of left) removedColumns.set(id, columns);
    const removed = [...removedColumns.keys()];
    if (removed.length) authorize(ds, 'delete', caller);
    await takeSnapshot(core, tx, ds, summary ?? state!, 'commit', caller);

    const now = ctx.nowIso();
    if (removed.length) {
      if (!body.append && sentIds.size === 0) await deleteAllEntries(tx, ds.id);
      else await deleteEntriesByIds(tx, ds.id, removed);
    }
    const events: EntryEvent[] = [];
    const changed = new Map<number, EntryRecord>();
    const base = body.append && summary ? summary.nextOrder : 0;
    for (let i = 0; i < body.entries.length; i++) {
      const sent = body.entries[i]!;
      if (sent.id === undefined) continue;
      const old = byId.get(sent.id);
      if (!old) continue;
      let data = body.extend ? { ...old.data, ...sent.data } : sent.data;
      if (runUpdateHooks) data = runOperationHooks(ds, 'update', data, core.matcher);
      const order = body.append ? undefined : i;
      await updateEntryRow(tx, sent.id, { data: JSON.stringify(data), now, order });
      changed.set(sent.id, { ...old, data, order: order ?? old.order, updatedAt: now });
      events.push({ type: 'dataSource.entry.update', entryId: sent.id, columns: Object.keys(sent.data) });
    }
    const insertItems: { data: Record<string, unknown>; order: number }[] = [];
    const insertIndexes: number[] = [];
    body.entries.forEach((sent, i) => {
      if (sent.id !== undefined) return;
      const data = runInsertHooks ? runOperationHooks(ds, 'insert', sent.data, core.matcher) : sent.data;
      insertItems.push({ data, order: body.append ? base + insertItems.length : i });
      insertIndexes.push(i);
    });
    const inserted = await insertMany(tx, ds, insertItems, now);
    for (const e of inserted) events.push({ type: 'dataSource.entry.create', entryId: e.id, columns: Object.keys(e.data) });
    for (const [id, columns] of removedColumns) events.push({ type: 'dataSource.entry.delete', entryId: id, columns });
    const version = await bumpDataVersion(tx, ds.id);
    const logs = await writeEntryLogs(core, tx, ds, caller, events);
    // The data set after the commit: built from the one before when that was in memory, else read here when the
    // answer needs it (in the transaction, so the answer is exactly what this commit produced). A streamed answer is
    // kept by the database instead, and read after the commit (docs/data-sources.md, "Streamed answers").
    let next: readonly EntryRecord[] | undefined;
    let pages: EntryPages | undefined;
    if (state) {
      const built: EntryRecord[] = [];
      for (const e of state.entries) if (!removedColumns.has(e.id)) built.push(changed.get(e.id) ?? e);
      for (const e of inserted) built.push(e);
      next = built;
    }
    // Streamed unless the cache keeps the data set (a full replacement of a data set too large for it).
    if (body.returnEntries && stream && !(next && core.cache.holds(next.length)))
      pages = await keepEntryPages(tx, ctx.db.dialect, ds.id, stream, { shape: 'commit' });
    else if (body.returnEntries && !next) next = await loadEntries(tx, ds.id);
    const clientIds: { id: number; clientId: unknown }[] = [];
    inserted.forEach((e, k) => {
      const sent = body.entries[insertIndexes[k]!]!;
      if (sent.clientId !== undefined) clientIds.push({ id: e.id, clientId: sent.clientId });
    });
    for (const sent of updates) if (sent.clientId !== undefined) clientIds.push({ id: sent.id!, clientId: sent.clientId });
    const outcome: Receipt = { ...(clientIds.length ? { clientIds } : {}), ...(errors.length ? { errors } : {}) };
    if (receipt) await insertCommitReceipt(tx, receipt.key, { requestHash: receipt.hash, answer: outcome }, now);
    await assertCallerLiveIn(tx, ctx.db.dialect, caller);
    // Only an append that inserts moves the summary on (an update or removal may take a column away).
    const appendedOnly = body.append && summary && changed.size === 0 && removed.length === 0 ? summary : undefined;
    return { applied: { version, next, pages, logs, inserted, changed: [...changed.values()], outcome, appendedOnly } } as const;
  });
}

/** Hours a commit's Idempotency-Key is remembered (`limits.idempotencyKeyHours`, default 24). */
export const DEFAULT_IDEMPOTENCY_KEY_HOURS = 24;

/** Forgets commit receipts older than the key lifetime, at every `tick()` and hourly. */
export function pruneCommitReceiptsRegularly(ctx: Core['ctx']): void {
  const prune = async () => {
    const hours = ctx.limits.idempotencyKeyHours ?? DEFAULT_IDEMPOTENCY_KEY_HOURS;
    await pruneCommitReceipts(ctx.db, new Date(ctx.clock() - hours * 3_600_000).toISOString());
  };
  ctx.onTick(prune);
  const timer = setInterval(() => prune().catch((error) => console.error('[in-app-runtime server] pruning commit receipts failed', error)), 3_600_000);
  timer.unref?.();
  ctx.onClose(() => clearInterval(timer));
}

/**
 * The ids of the entries a full replacement leaves out (not in `sentIds`), oldest first, with their columns, and
 * with `seen` every key of every entry (oldest entry first, first seen first: the undeclared columns of the data set
 * before the commit, as summary.ts counts them): read by id in pages of SCAN_PAGE inside the commit's transaction,
 * each page dropped at once. Entries of the same columns share one array.
 */
async function unsentEntries(
  tx: Queryable,
  dataSourceId: number,
  sentIds: ReadonlySet<number>,
  seeColumns: boolean,
): Promise<{ left: Map<number, string[]>; seen: string[] }> {
  const left = new Map<number, string[]>();
  const seen = new Set<string>();
  const shapes = new Map<string, string[]>();
  for (let after = 0; ; ) {
    const page = await entryDataPage(tx, dataSourceId, after, SCAN_PAGE);
    for (const row of page) {
      const sent = sentIds.has(Number(row.id));
      if (sent && !seeColumns) continue;
      const columns = Object.keys(JSON.parse(row.data) as Record<string, unknown>);
      if (seeColumns) for (const column of columns) seen.add(column);
      if (sent) continue;
      const key = columns.join('\u0000');
      let shared = shapes.get(key);
      if (!shared) shapes.set(key, (shared = columns));
      left.set(Number(row.id), shared);
    }
    if (page.length < SCAN_PAGE) return { left, seen: [...seen] };
    after = page[page.length - 1]!.id;
  }
}
