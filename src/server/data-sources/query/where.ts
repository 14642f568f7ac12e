import { asInvalidQuery, invalidQuery, isPlainObject } from './errors.js';
import { compileFilters } from './filters.js';
import { MAX_REGEX_LENGTH, guardRegex } from './regex-guard.js';
import { sift } from './sift-module.js';
import { compileFastWhere } from './where-fast.js';
import type { EntryRecord } from './types.js';

/**
 * `where`: a sift (MongoDB-style) query on the entry's `data` (keys are column names, dots reach nested
 * values), plus:
 * - `$filters`: the condition list of filters.ts, ANDed with the rest;
 * - `$iLike`: case-insensitive "contains" on strings (and numbers); with a `%` in the pattern it is a SQL
 *   ILIKE pattern instead (`%` any run of characters, `_` one character, anchored);
 * - top-level `$id`, `$order`, `$createdAt`, `$updatedAt`: a value or a sift value query on that entry
 *   field, e.g. `{ $id: { $in: [1, 2] } }` (plain `id` is a data column like any other).
 * Only the operators of WHERE_OPERATORS are accepted; `$where` and anything unknown is a 400 before any
 * matching happens. `$regex` is bounded (see regex-guard.ts).
 */
export const WHERE_OPERATORS = [
  '$eq', '$ne', '$gt', '$gte', '$lt', '$lte', '$in', '$nin', '$exists', '$regex', '$options', '$and', '$or',
  '$nor', '$not', '$mod', '$all', '$size', '$type', '$elemMatch', '$iLike',
] as const;

/** sift's operation-creator signature. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type OperationCreator<_T> = (params: any, ownerQuery: any, options: any, name: string) => any;

const ENTRY_FIELD_KEYS = { $id: 'id', $order: 'order', $createdAt: 'createdAt', $updatedAt: 'updatedAt' } as const;
type EntryFieldKey = keyof typeof ENTRY_FIELD_KEYS;

const TYPE_ALIASES = ['number', 'string', 'bool', 'array', 'null'];

function iLikeTester(pattern: string): (value: unknown) => boolean {
  if (pattern.length > MAX_REGEX_LENGTH) throw invalidQuery(`$iLike pattern is longer than ${MAX_REGEX_LENGTH} characters`);
  if (pattern.includes('%')) {
    const source = pattern.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/%/g, '.*').replace(/_/g, '.');
    const regex = new RegExp(`^${source}$`, 'is');
    return (value) => {
      const text = typeof value === 'string' || typeof value === 'number' ? String(value) : null;
      return text !== null && regex.test(text);
    };
  }
  const needle = new RegExp(pattern.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'i');
  return (value) => (typeof value === 'string' ? needle.test(value) : typeof value === 'number' ? needle.test(String(value)) : false);
}

const $iLike: OperationCreator<unknown> = (params, ownerQuery, options) => {
  if (typeof params !== 'string' && typeof params !== 'number') throw invalidQuery('$iLike must be a string');
  return sift.createEqualsOperation(iLikeTester(String(params)), ownerQuery, options);
};

const $regex: OperationCreator<unknown> = (params, ownerQuery, options, name) => {
  const flags = isPlainObject(ownerQuery) ? ownerQuery.$options : undefined;
  guardRegex(params, flags, '$regex');
  return sift.$regex(params as string, ownerQuery, options);
};

/** The explicit operation set: sift's own minus `$where`, with guarded `$regex` and custom `$iLike`. */
const OPERATIONS: Record<string, OperationCreator<unknown>> = {
  $eq: sift.$eq,
  $ne: sift.$ne,
  $gt: sift.$gt,
  $gte: sift.$gte,
  $lt: sift.$lt,
  $lte: sift.$lte,
  $in: sift.$in,
  $nin: sift.$nin,
  $exists: sift.$exists,
  $regex,
  $options: sift.$options as OperationCreator<unknown>,
  $and: sift.$and,
  $or: sift.$or,
  $nor: sift.$nor,
  $not: sift.$not,
  $mod: sift.$mod as OperationCreator<unknown>,
  $all: sift.$all,
  $size: sift.$size,
  $type: sift.$type as OperationCreator<unknown>,
  $elemMatch: sift.$elemMatch,
  $iLike,
};

/** Walks the query before sift sees it, so refusals name the exact field. */
function checkQuery(node: unknown, path: string): void {
  if (Array.isArray(node)) {
    node.forEach((item, i) => checkQuery(item, `${path}[${i}]`));
    return;
  }
  if (!isPlainObject(node)) return;
  for (const key of Object.keys(node)) {
    const value = node[key];
    const at = `${path}.${key}`;
    if (key.startsWith('$')) {
      if (!(WHERE_OPERATORS as readonly string[]).includes(key)) {
        throw invalidQuery(`${at}: operator ${key} is not allowed (allowed: ${WHERE_OPERATORS.join(' ')}, $filters)`);
      }
      switch (key) {
        case '$regex':
          guardRegex(value, node.$options, at);
          break;
        case '$options':
          if (!('$regex' in node)) throw invalidQuery(`${at} is only valid beside $regex`);
          break;
        case '$iLike':
          if (typeof value !== 'string' && typeof value !== 'number') throw invalidQuery(`${at} must be a string`);
          if (String(value).length > MAX_REGEX_LENGTH) throw invalidQuery(`${at} is longer than ${MAX_REGEX_LENGTH} characters`);
          break;
        case '$in':
        case '$nin':
        case '$all':
          if (!Array.isArray(value)) throw invalidQuery(`${at} must be an array`);
          break;
        case '$and':
        case '$or':
        case '$nor':
          if (!Array.isArray(value) || value.length === 0) throw invalidQuery(`${at} must be a non-empty array`);
          break;
        case '$mod':
          if (!Array.isArray(value) || value.length !== 2 || typeof value[0] !== 'number' || typeof value[1] !== 'number' || value[0] === 0) {
            throw invalidQuery(`${at} must be [divisor (non-zero number), remainder]`);
          }
          break;
        case '$size':
          if (typeof value !== 'number') throw invalidQuery(`${at} must be a number`);
          break;
        case '$type':
          if (typeof value !== 'string' || !TYPE_ALIASES.includes(value)) throw invalidQuery(`${at} must be one of ${TYPE_ALIASES.join(', ')}`);
          break;
        case '$elemMatch':
        case '$not':
          if (!isPlainObject(value)) throw invalidQuery(`${at} must be an object`);
          break;
      }
    }
    checkQuery(value, at);
  }
}

/** Internal switch for tests that compare the fast path with plain sift. */
export const whereOptions = { fastPath: true };

/**
 * Compiles a sift query (checked first) into a tester; sift's own construction errors become 400.
 * Simple shapes go through the exact fast path of where-fast.ts.
 */
function siftTester(query: Record<string, unknown>, field: string): (value: unknown) => boolean {
  checkQuery(query, field);
  const full = asInvalidQuery(field, () => sift.createQueryTester(query, { operations: OPERATIONS }) as (value: unknown) => boolean);
  const fast = whereOptions.fastPath ? compileFastWhere(query, full, iLikeTester) : null;
  return fast ? (fast as (value: unknown) => boolean) : full;
}

/** Compiles `where` once into a predicate over entries; throws HttpError 400 INVALID_QUERY on bad input. */
export function compileWhere(where: unknown, field = 'where'): (entry: EntryRecord) => boolean {
  if (where === undefined || where === null) return () => true;
  if (!isPlainObject(where)) throw invalidQuery(`${field} must be an object`);
  const rest: Record<string, unknown> = {};
  const fieldTests: ((entry: EntryRecord) => boolean)[] = [];
  let filters: ((data: Record<string, unknown>) => boolean) | null = null;
  for (const key of Object.keys(where)) {
    if (key === '$filters') {
      filters = compileFilters(where.$filters, `${field}.$filters`);
    } else if (Object.prototype.hasOwnProperty.call(ENTRY_FIELD_KEYS, key)) {
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
