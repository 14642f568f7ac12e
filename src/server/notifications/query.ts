import { compilePartialFilter } from '../../filter/partial.js';
import { HttpError } from '../http/errors.js';
import type { JsonObject } from './types.js';

/**
 * Compiles a caller's `where` or `scope` into a tester with partial-document semantics (src/filter/partial.ts:
 * nested plain objects are dotted paths, so `{ data: { foo: 'bar' } }` matches a document whose data has foo
 * 'bar' among other fields), or a 400 naming `field`.
 */
export function compileQuery(query: JsonObject, field: string): (doc: unknown) => boolean {
  try {
    return compilePartialFilter(query, field);
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
      test = compilePartialFilter(scope, 'scope');
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
