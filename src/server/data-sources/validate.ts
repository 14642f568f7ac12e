import { HttpError } from '../http/errors.js';
import type { DataSourceChanges } from './store/data-sources.js';
import { descKey } from './sql/prefilter.js';
import { pathSegments } from './sql/paths.js';
import { OPERATIONS, type AccessRule, type Hook, type HookEvent, type Operation } from './types.js';

/** Validation of data source request bodies. Every error is a 400 that names the field. */

const invalid = (field: string, message: string) => new HttpError(400, 'INVALID_FIELD', `Field "${field}" ${message}`);

export const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && (Object.getPrototypeOf(v) === Object.prototype || Object.getPrototypeOf(v) === null);

export function checkName(value: unknown, field = 'name'): string {
  if (typeof value !== 'string' || value.trim() === '') throw invalid(field, 'must be a non-empty string');
  const name = value.trim();
  if (name.length > 255) throw invalid(field, 'must be at most 255 characters');
  return name;
}

function stringArray(value: unknown, field: string): string[] {
  if (!Array.isArray(value) || value.some((v) => typeof v !== 'string')) throw invalid(field, 'must be an array of strings');
  return value as string[];
}

function idArray(value: unknown, field: string): number[] {
  if (!Array.isArray(value) || value.some((v) => !Number.isSafeInteger(v) || (v as number) <= 0))
    throw invalid(field, 'must be an array of positive integer ids');
  return value as number[];
}

const HOOK_EVENTS: readonly HookEvent[] = ['insert', 'update', 'beforeSave'];
const FIELD_OPS = ['trim', 'lower', 'upper'];

export function checkHooks(value: unknown, checkCondition: (where: unknown, field: string) => void): Hook[] {
  if (!Array.isArray(value)) throw invalid('hooks', 'must be an array');
  return value.map((hook, i): Hook => {
    const f = `hooks[${i}]`;
    if (!isPlainObject(hook)) throw invalid(f, 'must be an object');
    if (hook.type !== 'operations' && hook.type !== 'web') throw invalid(`${f}.type`, 'must be "operations" or "web"');
    if (!Array.isArray(hook.runOn) || hook.runOn.length === 0 || hook.runOn.some((e) => !HOOK_EVENTS.includes(e as HookEvent)))
      throw invalid(`${f}.runOn`, `must be a non-empty array of ${HOOK_EVENTS.join(', ')}`);
    let conditions: Record<string, unknown>[] | undefined;
    if (hook.conditions !== undefined) {
      if (!Array.isArray(hook.conditions)) throw invalid(`${f}.conditions`, 'must be an array of queries');
      conditions = hook.conditions.map((c, j) => {
        if (!isPlainObject(c)) throw invalid(`${f}.conditions[${j}]`, 'must be an object');
        checkCondition(c, `${f}.conditions[${j}]`);
        return c;
      });
    }
    if (!isPlainObject(hook.payload)) throw invalid(`${f}.payload`, 'must be an object');
    const runOn = hook.runOn as HookEvent[];
    if (hook.type === 'web') {
      const { url, headers, timeoutMs } = hook.payload;
      if (typeof url !== 'string' || !/^https?:\/\//i.test(url)) throw invalid(`${f}.payload.url`, 'must be an http(s) URL');
      try {
        new URL(url);
      } catch {
        throw invalid(`${f}.payload.url`, 'must be an http(s) URL');
      }
      if (headers !== undefined && (!isPlainObject(headers) || Object.values(headers).some((h) => typeof h !== 'string')))
        throw invalid(`${f}.payload.headers`, 'must be an object of strings');
      if (timeoutMs !== undefined && (typeof timeoutMs !== 'number' || !(timeoutMs > 0) || timeoutMs > 60_000))
        throw invalid(`${f}.payload.timeoutMs`, 'must be a number of ms between 1 and 60000');
      return { type: 'web', runOn, ...(conditions ? { conditions } : {}), payload: hook.payload as { url: string } };
    }
    for (const [column, op] of Object.entries(hook.payload)) {
      const ok = (typeof op === 'string' && (FIELD_OPS.includes(op) || op.includes('{{'))) || (isPlainObject(op) && typeof op.template === 'string');
      if (!ok) throw invalid(`${f}.payload.${column}`, 'must be "trim", "lower", "upper", a "{{column}}" template or { template }');
    }
    return { type: 'operations', runOn, ...(conditions ? { conditions } : {}), payload: hook.payload as Record<string, string> };
  });
}

export function checkAccessRules(value: unknown): AccessRule[] {
  if (!Array.isArray(value)) throw invalid('accessRules', 'must be an array');
  return value.map((rule, i): AccessRule => {
    const f = `accessRules[${i}]`;
    if (!isPlainObject(rule)) throw invalid(f, 'must be an object');
    if (!Array.isArray(rule.type) || rule.type.length === 0 || rule.type.some((t) => !OPERATIONS.includes(t as Operation)))
      throw invalid(`${f}.type`, `must be a non-empty array of ${OPERATIONS.join(', ')}`);
    let allow: AccessRule['allow'];
    if (rule.allow === 'all' || rule.allow === 'loggedIn') allow = rule.allow;
    else if (isPlainObject(rule.allow) && rule.allow.tokens !== undefined) allow = { tokens: idArray(rule.allow.tokens, `${f}.allow.tokens`) };
    else throw invalid(`${f}.allow`, 'must be "all", "loggedIn" or { tokens: [ids] }');
    const out: AccessRule = { type: rule.type as Operation[], allow };
    if (rule.include !== undefined) out.include = stringArray(rule.include, `${f}.include`);
    if (rule.exclude !== undefined) out.exclude = stringArray(rule.exclude, `${f}.exclude`);
    if (rule.appId !== undefined) out.appId = idArray(rule.appId, `${f}.appId`);
    if (rule.enabled !== undefined) {
      if (typeof rule.enabled !== 'boolean') throw invalid(`${f}.enabled`, 'must be a boolean');
      out.enabled = rule.enabled;
    }
    return out;
  });
}

const UPDATABLE = ['name', 'type', 'columns', 'public', 'hooks', 'accessRules', 'definition'];

/** Validates the body of a data source update. Unknown keys are refused so typos do not pass silently. */
export function checkDataSourceChanges(body: Record<string, unknown>, checkCondition: (where: unknown, field: string) => void): DataSourceChanges {
  for (const key of Object.keys(body)) if (!UPDATABLE.includes(key)) throw invalid(key, `cannot be changed (updatable: ${UPDATABLE.join(', ')})`);
  const changes: DataSourceChanges = {};
  if (body.name !== undefined) changes.name = checkName(body.name);
  if (body.type !== undefined) {
    if (body.type !== null && typeof body.type !== 'string') throw invalid('type', 'must be a string or null');
    changes.type = body.type;
  }
  if (body.columns !== undefined) changes.columns = body.columns === null ? null : [...new Set(stringArray(body.columns, 'columns'))];
  if (body.public !== undefined) {
    if (typeof body.public !== 'boolean') throw invalid('public', 'must be a boolean');
    changes.public = body.public;
  }
  if (body.hooks !== undefined) changes.hooks = checkHooks(body.hooks, checkCondition);
  if (body.accessRules !== undefined) changes.accessRules = checkAccessRules(body.accessRules);
  if (body.definition !== undefined) {
    if (!isPlainObject(body.definition)) throw invalid('definition', 'must be an object');
    declaredIndexes(body.definition);
    changes.definition = body.definition;
  }
  return changes;
}

export const MAX_DECLARED_INDEXES = 16;

/**
 * `definition.indexes`: data paths to index (data-sources/indexes.ts), as `where` names them (`age`,
 * `address.city`): segments of letters, digits, `_`, `-`, spaces, not only digits, not prototype names; or a
 * pair `[path, 'DESC']` (as `order` names it) for the path's descending index, `[path, 'ASC']` being the path.
 * Returns the index list keys (`desc:<path>` for a descending one, sql/prefilter.ts `descKey`).
 */
export function declaredIndexes(definition: Record<string, unknown>): string[] {
  const value = definition.indexes;
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value) || value.length > MAX_DECLARED_INDEXES)
    throw invalid('definition.indexes', `must be an array of at most ${MAX_DECLARED_INDEXES} data paths`);
  const keys = value.map((item: unknown, i) => {
    const pair = Array.isArray(item) && item.length === 2 && (item[1] === 'ASC' || item[1] === 'DESC');
    const path: unknown = pair ? item[0] : item;
    if (typeof path !== 'string' || !pathSegments(path))
      throw invalid(
        `definition.indexes[${i}]`,
        'must be a data path such as "age" or "address.city" (dot-separated names of letters, digits, _, - and spaces; not only digits; at most 8), or a pair such as ["age", "DESC"]',
      );
    return pair && item[1] === 'DESC' ? descKey(path) : path;
  });
  return [...new Set(keys)];
}

/** Entry data: a JSON object. */
export function checkEntryData(value: unknown, field: string): Record<string, unknown> {
  if (!isPlainObject(value)) throw invalid(field, 'must be a JSON object of column names to values');
  return value;
}

export function checkPositiveId(value: unknown, field: string): number {
  if (!Number.isSafeInteger(value) || (value as number) <= 0) throw invalid(field, 'must be a positive integer id');
  return value as number;
}

/** `append` from a body or a query string. */
export function parseBooleanFlag(value: unknown, field: string, fromQuery = false): boolean | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'boolean') return value;
  if (fromQuery && (value === 'true' || value === '1' || value === '')) return true;
  if (fromQuery && (value === 'false' || value === '0')) return false;
  throw invalid(field, 'must be a boolean');
}

export interface CommitBody {
  entries: { id?: number; data: Record<string, unknown>; clientId?: unknown }[];
  append: boolean;
  delete: number[];
  extend: boolean;
  runHooks: ('insert' | 'update')[];
  returnEntries: boolean;
}

export function checkCommitBody(body: Record<string, unknown>): CommitBody {
  if (!Array.isArray(body.entries)) throw invalid('entries', 'must be an array');
  const seen = new Set<number>();
  const entries = body.entries.map((e, i) => {
    if (!isPlainObject(e)) throw invalid(`entries[${i}]`, 'must be an object with data (and id to update)');
    const data = checkEntryData(e.data, `entries[${i}].data`);
    const out: CommitBody['entries'][number] = { data };
    if (e.id !== undefined && e.id !== null) {
      out.id = checkPositiveId(e.id, `entries[${i}].id`);
      if (seen.has(out.id)) throw invalid(`entries[${i}].id`, `repeats entry ${out.id}`);
      seen.add(out.id);
    }
    if (e.clientId !== undefined) out.clientId = e.clientId;
    return out;
  });
  const del = body.delete === undefined || body.delete === null ? [] : idArray(body.delete, 'delete');
  for (const id of del) if (seen.has(id)) throw invalid('delete', `holds entry ${id}, which entries also updates`);
  const flag = (name: string, fallback: boolean) => parseBooleanFlag(body[name], name) ?? fallback;
  const append = flag('append', false);
  // The spec pairs delete with append; without append, entries not sent are removed anyway: a delete list
  // there would be silently meaningless, so it is refused rather than ignored.
  if (del.length > 0 && !append) throw invalid('delete', 'is only used with append: true (without append, every entry not sent is removed)');
  let runHooks: CommitBody['runHooks'] = [];
  if (body.runHooks !== undefined && body.runHooks !== null) {
    if (!Array.isArray(body.runHooks) || body.runHooks.some((k) => k !== 'insert' && k !== 'update'))
      throw invalid('runHooks', 'must be an array of "insert" and/or "update"');
    runHooks = body.runHooks as CommitBody['runHooks'];
  }
  return {
    entries,
    append,
    delete: del,
    extend: flag('extend', false),
    runHooks,
    returnEntries: flag('returnEntries', true),
  };
}
