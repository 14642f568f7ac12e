import { safeTester } from '../../core/safe-query.js';
import { HttpError } from '../http/errors.js';
import type { JsonObject } from './types.js';

const isPlainObject = (value: unknown): value is JsonObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Logical operators whose operands are whole sub-queries. */
const LOGICAL = new Set(['$and', '$or', '$nor']);

/** Refuses `$where` (it would run caller-provided code) anywhere in a query. */
function refuseWhere(value: unknown, path: string): void {
  if (Array.isArray(value)) value.forEach((v, i) => refuseWhere(v, `${path}[${i}]`));
  else if (isPlainObject(value))
    for (const [key, v] of Object.entries(value)) {
      if (key === '$where') throw new HttpError(400, 'INVALID_QUERY', `Field "${path}" uses $where, which is not allowed`);
      refuseWhere(v, `${path}.${key}`);
    }
}

/**
 * Partial-document semantics: nested plain objects without operators become
 * dotted paths, so `{ data: { foo: 'bar' } }` matches a document whose data
 * has foo 'bar' among other fields.
 */
export function toPartialQuery(query: JsonObject, prefix = ''): JsonObject {
  const out: JsonObject = {};
  for (const [key, value] of Object.entries(query)) {
    if (LOGICAL.has(key) && Array.isArray(value)) {
      out[key] = value.map((q) => (isPlainObject(q) ? toPartialQuery(q, prefix) : q));
      continue;
    }
    if (key.startsWith('$')) {
      out[key] = value; // only reachable at the top level: nested objects with operators are kept whole
      continue;
    }
    const path = prefix + key;
    if (isPlainObject(value) && !Object.keys(value).some((k) => k.startsWith('$'))) {
      if (Object.keys(value).length === 0) out[path] = { $exists: true };
      else Object.assign(out, toPartialQuery(value, `${path}.`));
    } else out[path] = value;
  }
  return out;
}

/** Compiles a caller's query into a tester, or a 400 naming `field`. */
export function compileQuery(query: JsonObject, field: string): (doc: unknown) => boolean {
  refuseWhere(query, field);
  try {
    const test = safeTester(toPartialQuery(query), field);
    test({}); // surface operator errors now, not on the first document
    return test as (doc: unknown) => boolean;
  } catch (error) {
    throw new HttpError(400, 'INVALID_QUERY', `Field "${field}" is not a valid query: ${(error as Error).message}`);
  }
}

const testers = new Map<string, (doc: unknown) => boolean>();

/** A cached tester of one stored scope object (validated at write time; an unusable one matches nobody). */
function scopeTester(scope: JsonObject): (doc: unknown) => boolean {
  const key = JSON.stringify(scope);
  let test = testers.get(key);
  if (!test) {
    try {
      test = safeTester(toPartialQuery(scope), 'scope');
    } catch {
      test = () => false;
    }
    testers.set(key, test);
    if (testers.size > 2000) testers.delete(testers.keys().next().value!);
  }
  return test;
}

/** Whether any of a notification's scope objects matches any of the given records. */
export function scopeMatches(scope: readonly JsonObject[], records: readonly JsonObject[]): boolean {
  return scope.some((s) => {
    const test = scopeTester(s);
    return records.some((r) => test(r));
  });
}
