import { FilterError, isPlainObject } from './errors.js';
import { compileFilter, type Tester } from './tester.js';

/**
 * Compiles a trigger's `where` or a notification's `where`/`scope` into a tester with partial-document
 * semantics (design §7): nested plain
 * objects become dotted paths before sift sees them, so `{ type: 'analytics.pageView', data: { _pageId: 77 } }`
 * matches every page view of page 77 whatever else its data holds (sift alone would compare `data` with the
 * whole object). Objects whose keys are operators (`{ $in: [...] }`, `{ $gt: 3 }`) stay operator expressions
 * at their path, and an empty object `{}` means "present" (`$exists: true`); `$and` / `$or` / `$nor` members
 * are compiled the same way. The same rule serves log triggers and notifications. Operators are those of
 * operators.ts, checked and matched by tester.ts.
 *
 * Queries made only of equalities on plain values are checked by a direct path walk (no sift call): the
 * walk gives sift's answer for every document where it reaches a plain value, and defers to sift wherever
 * sift's rules differ (arrays on the path, objects, null and missing values).
 */
export type { Tester };

const LOGICAL = new Set(['$and', '$or', '$nor']);

/** The flattened, sift-ready form of a partial-document query. Throws FilterError on a malformed one. */
export function flattenWhere(where: Record<string, unknown>, path = 'where'): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const walk = (obj: Record<string, unknown>, prefix: string, at: string) => {
    for (const [key, value] of Object.entries(obj)) {
      if (key.startsWith('$')) {
        if (prefix !== '') throw new FilterError(`${at}: operator ${key} must stand alone in its object`);
        if (LOGICAL.has(key)) {
          if (!Array.isArray(value) || value.length === 0) throw new FilterError(`${at}.${key} must be a non-empty array of queries`);
          out[key] = value.map((member, i) => {
            if (!isPlainObject(member)) throw new FilterError(`${at}.${key}[${i}] must be an object`);
            return flattenWhere(member, `${at}.${key}[${i}]`);
          });
        } else out[key] = value;
        continue;
      }
      const full = prefix ? `${prefix}.${key}` : key;
      if (isPlainObject(value)) {
        const keys = Object.keys(value);
        if (keys.length === 0) {
          out[full] = { $exists: true };
          continue;
        }
        const operators = keys.filter((k) => k.startsWith('$'));
        if (operators.length > 0) {
          if (operators.length !== keys.length) throw new FilterError(`${at}.${key} mixes operators (${operators.join(', ')}) with field names`);
          out[full] = value;
        } else walk(value, full, `${at}.${key}`);
      } else out[full] = value;
    }
  };
  walk(where, '', path);
  return out;
}

function isScalar(value: unknown): value is string | number | boolean {
  return typeof value === 'string' || typeof value === 'boolean' || (typeof value === 'number' && !Number.isNaN(value));
}

/** Compiles a partial-document filter (undefined or `{}` matches everything). Throws FilterError for a malformed one. */
export function compilePartialFilter(where: unknown, path = 'where'): Tester {
  if (where === undefined || where === null) return () => true;
  if (!isPlainObject(where)) throw new FilterError(`${path} must be an object`);
  const query = flattenWhere(where, path);
  const entries = Object.entries(query);
  if (entries.length === 0) return () => true;
  const slow = compileFilter(query, path);
  if (!entries.every(([key, value]) => !key.startsWith('$') && isScalar(value))) return slow;
  const checks = entries.map(([key, value]) => ({ segments: key.split('.'), value }));
  return (doc) => {
    for (const { segments, value } of checks) {
      let current: unknown = doc;
      for (const segment of segments) {
        if (typeof current !== 'object' || current === null) return current === undefined || current === null ? false : slow(doc);
        if (Array.isArray(current)) return slow(doc);
        current = (current as Record<string, unknown>)[segment];
      }
      if (current === value) continue;
      if (typeof current === 'object' && current !== null) return slow(doc);
      return false;
    }
    return true;
  };
}

/** The value a query requires at `path` by plain equality, if any (used to index triggers by event type). */
export function equalityAt(where: unknown, path: string): string | number | boolean | undefined {
  if (!isPlainObject(where)) return undefined;
  try {
    const value = flattenWhere(where)[path];
    return isScalar(value) ? value : undefined;
  } catch {
    return undefined;
  }
}
