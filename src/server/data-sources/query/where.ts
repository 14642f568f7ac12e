import { FilterError } from '../../../filter/errors.js';
import { likeMatcher } from '../../../filter/like.js';
import { FILTER_OPERATORS } from '../../../filter/operators.js';
import { compileFilter } from '../../../filter/tester.js';
import { invalidQuery, isPlainObject } from './errors.js';
import { compileFilters } from './filters.js';
import { compileFastWhere } from './where-fast.js';
import { withoutDataPrefix } from './data-prefix.js';
import type { EntryRecord } from './types.js';

/**
 * `where`: a filter (src/filter/: sift, i.e. MongoDB-style, operators) on the entry's `data` (keys are
 * column names, dots reach nested values), plus:
 * - `$filters`: the condition list of filters.ts, ANDed with the rest;
 * - top-level `$id`, `$order`, `$createdAt`, `$updatedAt`: a value or a value query on that entry
 *   field, e.g. `{ $id: { $in: [1, 2] } }` (plain `id` is a data column like any other).
 * The operators are those of src/filter/operators.ts (`$like`/`$iLike` and `$regex` match in linear time);
 * `$where` and anything unknown is a 400 before any matching happens.
 */
export const WHERE_OPERATORS = FILTER_OPERATORS;

const ENTRY_FIELD_KEYS = { $id: 'id', $order: 'order', $createdAt: 'createdAt', $updatedAt: 'updatedAt' } as const;
type EntryFieldKey = keyof typeof ENTRY_FIELD_KEYS;

/** Runs `fn`; a FilterError becomes 400 INVALID_QUERY with its message. */
function asHttp<T>(fn: () => T): T {
  try {
    return fn();
  } catch (error) {
    if (error instanceof FilterError) throw invalidQuery(error.message);
    throw error;
  }
}

/** Internal switch for tests that compare the fast path with plain sift. */
export const whereOptions = { fastPath: true };

/**
 * Compiles a filter (checked first) into a tester; every refusal is a 400 INVALID_QUERY.
 * Simple shapes go through the exact fast path of where-fast.ts.
 */
function siftTester(query: Record<string, unknown>, field: string): (value: unknown) => boolean {
  return asHttp(() => {
    const full = compileFilter(query, field);
    const fast = whereOptions.fastPath ? compileFastWhere(query, full, likeMatcher) : null;
    return fast ? (fast as (value: unknown) => boolean) : full;
  });
}

/** Compiles `where` once into a predicate over entries; throws HttpError 400 INVALID_QUERY on bad input. */
export function compileWhere(raw: unknown, field = 'where'): (entry: EntryRecord) => boolean {
  // `data.<column>` is the column, wherever a data source where comes from (data-prefix.ts; a no-op when done).
  const where = withoutDataPrefix(raw);
  if (where === undefined || where === null) return () => true;
  if (!isPlainObject(where)) throw invalidQuery(`${field} must be an object`);
  const rest: Record<string, unknown> = {};
  const fieldTests: ((entry: EntryRecord) => boolean)[] = [];
  let filters: ((data: Record<string, unknown>) => boolean) | null = null;
  for (const key of Object.keys(where)) {
    if (key === '$filters') {
      filters = compileFilters(where.$filters, `${field}.$filters`);
    } else if (Object.hasOwn(ENTRY_FIELD_KEYS, key)) {
      const entryField = ENTRY_FIELD_KEYS[key as EntryFieldKey];
      const test = siftTester({ v: where[key] }, `${field}.${key}`);
      const holder = { v: undefined as unknown };
      fieldTests.push((entry) => {
        holder.v = entry[entryField];
        return test(holder);
      });
    } else {
      rest[key] = where[key];
    }
  }
  const dataTest = Object.keys(rest).length > 0 ? siftTester(rest, field) : null;
  const tests: ((entry: EntryRecord) => boolean)[] = [...fieldTests];
  if (filters) {
    const f = filters;
    tests.push((entry) => f(entry.data));
  }
  if (dataTest) tests.push((entry) => dataTest(entry.data));
  if (tests.length === 0) return () => true;
  if (tests.length === 1) return tests[0]!;
  return (entry) => {
    for (let i = 0; i < tests.length; i++) if (!tests[i]!(entry)) return false;
    return true;
  };
}
