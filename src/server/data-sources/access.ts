import type { Queryable } from '../db/database.js';
import { HttpError } from '../http/errors.js';
import { assertRunLive, assertRunLiveIn, type RunLiveness } from '../store/run-liveness.js';
import type { TokenRecord } from '../store/identity.js';
import { setOwn } from './query/values.js';
import type { AccessRule, DataSourceRecord, EntryRecord, Operation } from './types.js';

/**
 * Who performs a data source operation.
 * - `token`: a REST call, with the caller's token (or none).
 * - `app`: server-side work of an app (pipeline runs): the rights of that app's API tokens, without per-token rules.
 *   `chain`: how many log-triggered runs led to this one (its writes' log records carry it, see log-triggers.ts).
 *   `run`: the run's liveness; no call starts and no write commits once it has ended.
 * - `system`: trusted internal work; no checks.
 */
export type Caller =
  | { kind: 'token'; token: TokenRecord | null }
  | { kind: 'app'; appId: number; organizationId: number; chain?: number; run?: RunLiveness }
  | { kind: 'system' };

/** When a call starts: a run that has ended makes no more calls (store/run-liveness.ts). */
export function assertCallerLive(caller: Caller): void {
  if (caller.kind === 'app') assertRunLive(caller.run);
}

/** Last in a write's transaction: the write of a run that has ended meanwhile is rolled back (store/run-liveness.ts). */
export async function assertCallerLiveIn(tx: Queryable, dialect: 'sqlite' | 'postgres', caller: Caller): Promise<void> {
  if (caller.kind === 'app') await assertRunLiveIn(tx, dialect, caller.run);
}

/** What a granted operation may see: `include`/`exclude` of the granting rule. */
export interface Grant {
  include?: string[];
  exclude?: string[];
}

const VERB: Record<Operation, string> = { select: 'read', insert: 'insert', update: 'update', delete: 'delete' };

export function accessDenied(ds: DataSourceRecord, operation: Operation): HttpError {
  return new HttpError(403, 'datasource.access', `The security rules for the data source "${ds.name}" do not allow this app to ${VERB[operation]} data.`);
}

function ruleMatches(rule: AccessRule, operation: Operation, caller: Caller, ds: DataSourceRecord): boolean {
  if (rule.enabled === false || !rule.type.includes(operation)) return false;
  const appId = caller.kind === 'token' ? caller.token?.appId : caller.kind === 'app' ? caller.appId : undefined;
  if (rule.appId && rule.appId.length > 0 && (appId == null || !rule.appId.includes(appId))) return false;
  if (rule.allow === 'all') return true;
  const orgId = caller.kind === 'token' ? caller.token?.organizationId : caller.kind === 'app' ? caller.organizationId : undefined;
  if (rule.allow === 'loggedIn') return orgId === ds.organizationId;
  return caller.kind === 'token' && caller.token !== null && caller.token.organizationId === ds.organizationId && rule.allow.tokens.includes(caller.token.id);
}

/**
 * Decides whether `caller` may perform `operation` on `ds`. Returns the grant (column filter) or throws
 * 401 (no token and nothing public) / 403 `datasource.access`.
 *
 * Order: studio tokens of the organization and system callers always pass; a public data source is readable
 * by anyone; then the rules top to bottom (first grant wins); with no rules, the owning app's tokens (any app of
 * the organization for an organization-level data source) pass.
 */
export function authorize(ds: DataSourceRecord, operation: Operation, caller: Caller): Grant {
  if (caller.kind === 'system') return {};
  if (caller.kind === 'token' && caller.token?.kind === 'studio' && caller.token.organizationId === ds.organizationId) return {};
  const rules = ds.accessRules.filter((r) => r.enabled !== false);
  if (rules.length > 0) {
    for (const rule of rules) if (ruleMatches(rule, operation, caller, ds)) return { include: rule.include, exclude: rule.exclude };
  }
  if (operation === 'select' && ds.public) return {};
  if (caller.kind === 'token' && caller.token === null)
    throw new HttpError(401, 'MISSING_TOKEN', `The data source "${ds.name}" is not public: this request needs an Auth-token header`);
  if (rules.length === 0) {
    const appId = caller.kind === 'token' ? caller.token!.appId : caller.appId;
    const orgId = caller.kind === 'token' ? caller.token!.organizationId : caller.organizationId;
    if (orgId === ds.organizationId && (ds.appId === null || ds.appId === appId)) return {};
  }
  throw accessDenied(ds, operation);
}

/** Whether the caller may see that the data source exists (any operation, or public). */
export function canSee(ds: DataSourceRecord, caller: Caller): boolean {
  for (const op of ['select', 'insert', 'update', 'delete'] as const) {
    try {
      authorize(ds, op, caller);
      return true;
    } catch {
      /* try the next operation */
    }
  }
  return false;
}

/** Applies a grant's include/exclude to an entry's data (a new object; the input is not changed). */
export function filterColumns(data: Record<string, unknown>, grant: Grant): Record<string, unknown> {
  if (!grant.include && !grant.exclude) return data;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(data)) {
    if (grant.include && !grant.include.includes(key)) continue;
    if (grant.exclude && grant.exclude.includes(key)) continue;
    setOwn(out, key, data[key]);
  }
  return out;
}

export const hasColumnFilter = (grant: Grant) => grant.include !== undefined || grant.exclude !== undefined;

/**
 * The data of an entry the caller just wrote, as it may see it in the answer: filtered by its read grant;
 * without a read right, only the columns it sent (so a write can never read what the rules hide).
 */
export function writtenData(ds: DataSourceRecord, caller: Caller, data: Record<string, unknown>, sent: readonly string[]): Record<string, unknown> {
  let grant: Grant;
  try {
    grant = authorize(ds, 'select', caller);
  } catch {
    const out: Record<string, unknown> = {};
    for (const key of sent) if (Object.hasOwn(data, key)) setOwn(out, key, data[key]);
    return out;
  }
  return filterColumns(data, grant);
}

/** The entries as `grant` shows them: the columns it hides taken out of each entry's data. */
export const withGrant = (entries: readonly EntryRecord[], grant: Grant): readonly EntryRecord[] =>
  hasColumnFilter(grant) ? entries.map((e) => ({ ...e, data: filterColumns(e.data, grant) })) : entries;
