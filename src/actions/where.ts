/**
 * Partial-document `where` of log and analytics triggers (design §7):
 * `{ data: { _pageId: 77 } }` matches a document whose `data._pageId` is 77
 * among other fields. Nested plain objects are compiled to dotted paths
 * (`{ 'data._pageId': 77 }`) before sift sees them; operator objects
 * (`{ $gt: 1 }`), arrays and `$and`/`$or` stay as they are.
 */
import sift from 'sift';

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Date) && !(v instanceof RegExp);

const hasOperator = (v: Record<string, unknown>) => Object.keys(v).some((k) => k.startsWith('$'));

export function compileWhere(where: Record<string, unknown>, prefix = ''): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(where)) {
    if (key.startsWith('$')) {
      out[key] = Array.isArray(value) ? value.map((v) => (isPlainObject(v) ? compileWhere(v) : v)) : value;
      continue;
    }
    const path = prefix ? `${prefix}.${key}` : key;
    if (isPlainObject(value) && !hasOperator(value) && Object.keys(value).length > 0) Object.assign(out, compileWhere(value, path));
    else out[path] = value;
  }
  return out;
}

/** A predicate for a partial-document `where` (no `where`: matches everything). */
export function partialMatcher(where: Record<string, unknown> | undefined): (doc: unknown) => boolean {
  if (!where || Object.keys(where).length === 0) return () => true;
  return sift(compileWhere(where)) as (doc: unknown) => boolean;
}
