import { canAccessApp } from '../http/auth.js';
import { HttpError } from '../http/errors.js';
import { getApp } from '../store/identity.js';
import { authorize, canSee, type Caller } from './access.js';
import { resolveDataSource, type Core, type DataSourceRef } from './core.js';
import { compileWhere } from './engine.js';
import { deleteDataSourceRow, findDataSourceById, insertDataSource, listDataSources, nameTaken, updateDataSourceRow } from './store/data-sources.js';
import type { DataSourceRecord } from './types.js';
import { checkDeclaredIndexRoom, dropAllIndexes, dropLeftoverIndexes, syncDeclaredIndexes } from './indexes.js';
import { checkDataSourceChanges, checkName, declaredIndexes } from './validate.js';

/** Data source metadata: list, get, create, update, delete. */

export type DataSourceView = Omit<DataSourceRecord, 'dataVersion'>;

export function toDataSourceView(ds: DataSourceRecord): DataSourceView {
  const { dataVersion: _v, ...view } = ds;
  return view;
}

const nameConflict = (name: string) => new HttpError(409, 'NAME_TAKEN', `A data source named "${name}" already exists in this organization`);

/** The organization/app a list or create works in: exactly one of appId and organizationId. */
export interface DataSourceScope {
  appId?: unknown;
  organizationId?: unknown;
}

const given = (v: unknown) => v !== undefined && v !== null && v !== '';

/** The caller's own organization (a list without context lists it), or 401 without a token. */
function ownOrganization(caller: Caller): number {
  if (caller.kind === 'app') return caller.organizationId;
  if (caller.kind === 'token' && caller.token) return caller.token.organizationId;
  if (caller.kind === 'token') throw new HttpError(401, 'MISSING_TOKEN', 'This route needs an Auth-token header');
  throw new HttpError(400, 'INVALID_PARAMETER', 'Give one of the query parameters "appId" and "organizationId"');
}

async function resolveScope(core: Core, caller: Caller, scope: DataSourceScope): Promise<{ organizationId: number; appId: number | null }> {
  if (given(scope.appId) === given(scope.organizationId))
    throw new HttpError(400, 'INVALID_PARAMETER', 'Give exactly one of the query parameters "appId" and "organizationId"');
  const key = given(scope.appId) ? 'appId' : 'organizationId';
  const raw = String(scope[key]);
  if (!/^\d+$/.test(raw) || Number(raw) <= 0 || !Number.isSafeInteger(Number(raw)))
    throw new HttpError(400, 'INVALID_PARAMETER', `Query parameter "${key}" must be a positive integer`);
  const id = Number(raw);
  if (caller.kind === 'system') {
    if (key === 'organizationId') return { organizationId: id, appId: null };
    const app = await getApp(core.ctx.db, id);
    if (!app) throw new HttpError(404, 'APP_NOT_FOUND', `App ${id} not found`);
    return { organizationId: app.organizationId, appId: app.id };
  }
  const token = caller.kind === 'token' ? caller.token : null;
  if (caller.kind === 'token' && !token) throw new HttpError(401, 'MISSING_TOKEN', 'This route needs an Auth-token header');
  const orgId = token ? token.organizationId : (caller as { organizationId: number }).organizationId;
  if (key === 'organizationId') {
    // Another organization answers as a missing one (issue 15, no probing).
    if (id !== orgId) throw new HttpError(404, 'ORGANIZATION_NOT_FOUND', `Organization ${id} not found`);
    return { organizationId: id, appId: null };
  }
  const app = await getApp(core.ctx.db, id);
  const allowed = app && (token ? canAccessApp(token, app) : caller.kind === 'app' && caller.appId === app.id);
  if (!app || !allowed) throw new HttpError(404, 'APP_NOT_FOUND', `App ${id} not found`);
  return { organizationId: app.organizationId, appId: app.id };
}

/**
 * What a caller that may use but not manage a data source (a public reader, a token granted by a rule) sees:
 * web hooks without their headers, credentials and query strings (they often carry secrets).
 */
function viewFor(caller: Caller, ds: DataSourceRecord): DataSourceView {
  const view = toDataSourceView(ds);
  if (manageLevel(caller, ds)) return view;
  return {
    ...view,
    hooks: view.hooks.map((hook) => {
      if (hook.type !== 'web') return hook;
      let url = '[redacted]';
      try {
        const parsed = new URL(hook.payload.url);
        url = parsed.origin + parsed.pathname;
      } catch {
        /* keep the placeholder */
      }
      const { headers, ...payload } = hook.payload as typeof hook.payload & { headers?: Record<string, string> };
      return { ...hook, payload: { ...payload, url, ...(headers ? { headers: Object.fromEntries(Object.keys(headers).map((k) => [k, '[redacted]'])) } : {}) } };
    }),
  };
}

/**
 * The data sources the caller may see in a context: `appId` (that app's), `organizationId` (all of the
 * organization), or neither (all of the caller's own organization). `type` keeps those of that type only.
 */
export async function listOf(core: Core, caller: Caller, scope: DataSourceScope & { type?: unknown }): Promise<DataSourceView[]> {
  if (scope.type !== undefined && typeof scope.type !== 'string') throw new HttpError(400, 'INVALID_PARAMETER', 'Query parameter "type" must be a string');
  const { organizationId, appId } =
    !given(scope.appId) && !given(scope.organizationId) ? { organizationId: ownOrganization(caller), appId: null } : await resolveScope(core, caller, scope);
  const all = await listDataSources(core.ctx.db, appId !== null ? { appId } : { organizationId });
  const typed = scope.type === undefined ? all : all.filter((ds) => ds.type === scope.type);
  return typed.filter((ds) => canSee(ds, caller)).map((ds) => viewFor(caller, ds));
}

export async function getOne(core: Core, caller: Caller, ref: DataSourceRef): Promise<DataSourceView> {
  const ds = await resolveDataSource(core.ctx.db, ref, caller);
  if (!canSee(ds, caller)) throw hiddenError(ds, caller);
  return viewFor(caller, ds);
}

function hiddenError(ds: DataSourceRecord, caller: Caller): HttpError {
  try {
    authorize(ds, 'select', caller);
  } catch (error) {
    return error as HttpError;
  }
  return new HttpError(403, 'FORBIDDEN', 'No access');
}

/** Only studio tokens (and trusted server work) may change security settings; client tokens manage nothing. */
function mayManage(caller: Caller, ds: { organizationId: number; appId: number | null }): 'studio' | 'app' | false {
  if (caller.kind === 'system') return 'studio';
  if (caller.kind === 'app') return caller.organizationId === ds.organizationId && (ds.appId === null || ds.appId === caller.appId) ? 'app' : false;
  const token = caller.token;
  // A client token (the token of a page) uses entries as the rules allow but never manages the data source.
  if (!token || token.organizationId !== ds.organizationId || token.kind === 'client') return false;
  if (token.kind === 'studio') return 'studio';
  return ds.appId === null || ds.appId === token.appId ? 'app' : false;
}

/**
 * Whether a non-studio manager also holds every right under the data source's access rules: changing its
 * metadata (a web hook receives every saved entry) or deleting it is never less than reading and writing
 * all of its data. Without rules this is the owning app's tokens, i.e. `mayManage` already decided.
 */
function holdsAllRights(caller: Caller, ds: DataSourceRecord): boolean {
  for (const op of ['select', 'insert', 'update', 'delete'] as const) {
    try {
      authorize(ds, op, caller);
    } catch {
      return false;
    }
  }
  return true;
}

/** `studio`: may change anything; `app`: metadata but not security settings; false: read-only at most. */
function manageLevel(caller: Caller, ds: DataSourceRecord | { organizationId: number; appId: number | null }): 'studio' | 'app' | false {
  const level = mayManage(caller, ds);
  if (level === 'app' && 'accessRules' in ds && ds.accessRules.length > 0 && !holdsAllRights(caller, ds)) return false;
  return level;
}

function checkManage(caller: Caller, ds: DataSourceRecord | { organizationId: number; appId: number | null; name?: string }, changes: object) {
  const level = manageLevel(caller, ds);
  if (!level) {
    if (caller.kind === 'token' && !caller.token) throw new HttpError(401, 'MISSING_TOKEN', 'This route needs an Auth-token header');
    throw new HttpError(403, 'FORBIDDEN', 'This token may not change this data source');
  }
  if (level !== 'studio')
    for (const key of ['accessRules', 'public'] as const)
      if (key in changes) throw new HttpError(403, 'STUDIO_ONLY', `Only studio tokens may change "${key}" of a data source`);
}

export async function createOne(core: Core, caller: Caller, scope: DataSourceScope, body: Record<string, unknown>): Promise<DataSourceView> {
  const { organizationId, appId } = await resolveScope(core, caller, scope);
  const name = checkName(body.name);
  const { name: _n, ...rest } = body;
  const changes = checkDataSourceChanges(rest, (where, field) => checkCondition(where, field));
  checkManage(caller, { organizationId, appId }, changes);
  const create = async () => {
    if (changes.definition) await checkDeclaredIndexRoom(core.ctx, organizationId, undefined, declaredIndexes(changes.definition));
    const id = await core.ctx.db.transaction(async (tx) => {
      if (await nameTaken(tx, organizationId, name)) throw nameConflict(name);
      const id = await insertDataSource(tx, { name, type: changes.type ?? null, organizationId, appId, now: core.ctx.nowIso() });
      if (Object.keys(changes).length) await updateDataSourceRow(tx, id, changes, core.ctx.nowIso());
      return id;
    });
    if (changes.definition) await syncDeclaredIndexes(core.ctx, id, declaredIndexes(changes.definition));
    return id;
  };
  // A definition (indexes) is checked against the index limits and built in one piece (indexes.ts IndexGate).
  const id = changes.definition ? await core.indexBuilds(create) : await create();
  return toDataSourceView((await findDataSourceById(core.ctx.db, id))!);
}

export async function updateOne(core: Core, caller: Caller, ref: DataSourceRef, body: Record<string, unknown>): Promise<DataSourceView> {
  const ds = await resolveDataSource(core.ctx.db, ref, caller);
  const changes = checkDataSourceChanges(body, (where, field) => checkCondition(where, field));
  checkManage(caller, ds, changes);
  const update = async () => {
    if (changes.definition) await checkDeclaredIndexRoom(core.ctx, ds.organizationId, ds.id, declaredIndexes(changes.definition));
    await core.ctx.db.transaction(async (tx) => {
      if (changes.name !== undefined && (await nameTaken(tx, ds.organizationId, changes.name, ds.id))) throw nameConflict(changes.name);
      await updateDataSourceRow(tx, ds.id, changes, core.ctx.nowIso());
    });
    // Indexes are DDL, built outside the transaction (on PostgreSQL concurrently with writes).
    if (changes.definition) await syncDeclaredIndexes(core.ctx, ds.id, declaredIndexes(changes.definition));
  };
  await (changes.definition ? core.indexBuilds(update) : update());
  return toDataSourceView((await findDataSourceById(core.ctx.db, ds.id))!);
}

export async function deleteOne(core: Core, caller: Caller, ref: DataSourceRef): Promise<void> {
  const ds = await resolveDataSource(core.ctx.db, ref, caller);
  checkManage(caller, ds, {});
  await dropAllIndexes(core.ctx.db, ds.id);
  await core.ctx.db.transaction((tx) => deleteDataSourceRow(tx, ds.id));
  await dropLeftoverIndexes(core.ctx.db, ds.id);
  core.cache.drop(ds.id);
  core.summaries.drop(ds.id);
  await core.files.removeDataSource(ds.id);
}

/** A hook condition must be a valid query (same operators as `where`). */
function checkCondition(where: unknown, field: string): void {
  try {
    compileWhere(where);
  } catch (error) {
    throw new HttpError(400, 'INVALID_FIELD', `Field "${field}" is not a valid query: ${(error as Error).message}`);
  }
}
