import type { Transaction } from '../db/database.js';
import { HttpError } from '../http/errors.js';
import { checkFilterFields } from '../http/nesting.js';
import { authorize, filterColumns, hasColumnFilter, type Caller } from './access.js';
import { resolveDataSource, type Core, type DataSourceRef } from './core.js';
import { compileWhere } from './engine.js';
import { withoutDataPrefix } from './query/data-prefix.js';
import { ENTRY_PAGE_ROWS, entryPages, filteredEntryPages, type EntryPages } from './entry-pages.js';
import { isDataError } from './sql-delete.js';
import { visible } from './sql-query.js';
import { columnsOf, type Cond } from './sql/conditions.js';
import { renderCond } from './sql/dialect.js';
import { raw, sql } from './sql/fragment.js';
import { dialectOf } from './sql/select.js';
import { translateWhere } from './sql/where.js';
import { entryJsonSql, type EntryTuple } from './store/entries.js';
import { versionEntriesSource } from './store/version-rows.js';
import { findVersion, readSnapshot } from './store/versions.js';
import type { EntryView } from './types.js';

/**
 * `GET|POST …/versions/:versionId/data`: the entries of a version, oldest id first, optionally filtered (`where`,
 * sift style) and limited. A version rebuilt from changes is computed by the database (store/version-rows.ts),
 * kept by it (`Transaction.keep`) and answered in pages (docs/data-sources.md, "Streamed answers"): the server
 * never holds the data set. A `where` the SQL translation takes (sql/where.ts) runs in the same statement; any
 * other runs on the JS evaluator page by page. Versions older than the change records keep their snapshot (one
 * JSON text), answered whole as before.
 */
export async function versionEntries(
  core: Core,
  caller: Caller,
  ref: DataSourceRef,
  versionId: number,
  options: { limit?: unknown; where?: unknown },
): Promise<{ entries: EntryView[] } | { pages: EntryPages }> {
  const { ctx } = core;
  const ds = await resolveDataSource(ctx.db, ref, caller);
  const grant = authorize(ds, 'select', caller);
  let limit = 0;
  if (options.limit !== undefined && options.limit !== null && options.limit !== '') {
    limit = Number(options.limit);
    if (!Number.isInteger(limit) || limit < 0) throw new HttpError(400, 'INVALID_FIELD', 'Field "limit" must be a non-negative integer');
  }
  checkFilterFields(options, ctx.limits.filterDepth, ['where']);
  // `data.<column>` is the column (query/data-prefix.ts), for the SQL translation as for the JS evaluator.
  const where = options.where === undefined || options.where === null ? undefined : withoutDataPrefix(options.where);
  const test = where === undefined ? undefined : compileWhere(where);
  const cond = where === undefined ? undefined : translateWhere(where);
  // A column the rule hides is missing for the JS evaluator's `where`: only that path gives that answer.
  const bySql = cond !== null && (cond === undefined || !hasColumnFilter(grant) || [...columnsOf(cond)].every((c) => visible(grant, c)));
  const run = (sqlWhere: Cond | undefined) =>
    ctx.db.transaction(async (tx) => {
      const version = await findVersion(tx, ds.id, versionId);
      if (!version) throw new HttpError(404, 'VERSION_NOT_FOUND', `Version ${versionId} not found in data source ${ds.id}`);
      if (version.dataVersion !== null) {
        const inJs = test !== undefined && !sqlWhere;
        // Without a column filter or a JS `where`, the database writes the entries' JSON and builds the pages, as
        // for `GET …/data`: no row becomes a JS value.
        if (!inJs && !hasColumnFilter(grant))
          return { snapshot: undefined, kept: undefined, text: await keepVersionText(tx, ctx.db.dialect, ds.id, version.dataVersion, sqlWhere, limit) };
        return {
          snapshot: undefined,
          kept: await keepVersionRows(tx, ctx.db.dialect, ds.id, version.dataVersion, sqlWhere, inJs ? 0 : limit),
          text: undefined,
        };
      }
      const text = await readSnapshot(tx, version.data.entries.key);
      if (text === undefined) throw new HttpError(404, 'VERSION_NOT_FOUND', `The snapshot of version ${versionId} is gone`);
      return { snapshot: JSON.parse(text) as EntryView[], kept: undefined, text: undefined };
    });
  let state: Awaited<ReturnType<typeof run>>;
  let filteredBySql = bySql && cond !== undefined;
  try {
    state = await run(bySql ? cond : undefined);
  } catch (error) {
    // Data the SQL functions refuse (e.g. "\u0000" in a string is not valid jsonb): the JS evaluator decides.
    if (!(filteredBySql && isDataError(error))) throw error;
    filteredBySql = false;
    state = await run(undefined);
  }
  if (state.snapshot) {
    // Hidden columns are removed before `where` runs, so they cannot be probed through it.
    let out = hasColumnFilter(grant) ? state.snapshot.map((e) => ({ ...e, data: filterColumns(e.data, grant) })) : state.snapshot;
    if (test) out = out.filter((e) => test(e));
    if (limit) out = out.slice(0, limit);
    return { entries: out };
  }
  if (state.text) {
    const text = state.text;
    return { pages: { next: () => text.next(ENTRY_PAGE_ROWS), close: () => text.close() } };
  }
  const kept = state.kept!;
  if (test && !filteredBySql) return { pages: filteredEntryPages(kept, ds.id, grant, test, limit) };
  return { pages: entryPages(kept, ds.id, grant, { shape: 'commit' }) };
}

/** `FROM …` of the version's entries (matching `where`, at most `limit`, 0: all), oldest id first. */
function versionFrom(engine: 'sqlite' | 'postgres', dataSourceId: number, dataVersion: number, where: Cond | undefined, limit: number) {
  const source = versionEntriesSource(dataSourceId, dataVersion, { withDoc: where !== undefined && engine === 'postgres' });
  const filter = where === undefined ? raw('') : sql` WHERE ${renderCond(dialectOf(engine), where)}`;
  return sql`FROM ${source}${filter} ORDER BY e.id${raw(limit > 0 ? ` LIMIT ${Math.min(limit, Number.MAX_SAFE_INTEGER)}` : '')}`;
}

/** The version's entries, kept by the database as rows (for a column filter or a `where` left to JS). */
function keepVersionRows(tx: Transaction, engine: 'sqlite' | 'postgres', dataSourceId: number, dataVersion: number, where: Cond | undefined, limit: number) {
  const from = versionFrom(engine, dataSourceId, dataVersion, where, limit);
  return tx.keep<EntryTuple>(`SELECT e.id, e.data, e.sort_order, e.created_at, e.updated_at ${from.text}`, from.params);
}

/** The version's entries, kept by the database as their answer JSON (a commit's shape, store/entries.ts). */
function keepVersionText(tx: Transaction, engine: 'sqlite' | 'postgres', dataSourceId: number, dataVersion: number, where: Cond | undefined, limit: number) {
  const from = versionFrom(engine, dataSourceId, dataVersion, where, limit);
  return tx.keepText({
    columns: 'e.id, e.data, e.sort_order, e.created_at, e.updated_at',
    from: from.text,
    text: entryJsonSql(engine, dataSourceId, true),
    params: from.params,
  });
}
