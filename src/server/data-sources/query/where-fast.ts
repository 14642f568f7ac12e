import { compileRegex } from '../../../filter/regex.js';
import { isPlainObject } from './errors.js';

/**
 * A fast path for the common shape of `where`: columns compared with scalars by `$eq $ne $gt $gte $lt
 * $lte $in $nin $exists $regex $like $iLike` (or plain equality). It reproduces sift's results exactly for
 * scalar values (number, string, boolean, null, missing), and hands every entry whose value on a queried
 * path is an object or an array (or whose path crosses a non-object) to the full sift tester, so the
 * results are identical to sift's for every entry. Returns null when the query has another shape.
 */
type Scalar = string | number | boolean | null;
type ScalarTest = (value: unknown, present: boolean) => boolean;

/** Marker: this entry needs the full sift tester. */
const FALLBACK = Symbol('fallback');

const isScalar = (value: unknown): value is Scalar => value === null || typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean';

/** sift's `equals` restricted to scalars: null matches null and missing, otherwise same type and ===. */
const equalsTest = (x: Scalar): ScalarTest => (x === null ? (v) => v === null || v === undefined : (v) => v === x);

/** sift's numerical operations: the value must have the operand's type. */
function comparison(op: string, x: Scalar): ScalarTest | null {
  if (x === null) return null;
  const type = typeof x;
  switch (op) {
    case '$gt':
      return (v) => typeof v === type && (v as Scalar)! > x;
    case '$gte':
      return (v) => typeof v === type && (v === x || (v as Scalar)! >= x);
    case '$lt':
      return (v) => typeof v === type && (v as Scalar)! < x;
    case '$lte':
      return (v) => typeof v === type && (v === x || (v as Scalar)! <= x);
    default:
      return null;
  }
}

type Like = (pattern: string, caseInsensitive: boolean) => (v: unknown) => boolean;

function operatorTest(op: string, arg: unknown, owner: Record<string, unknown>, like: Like): ScalarTest | null {
  switch (op) {
    case '$eq':
      return isScalar(arg) ? equalsTest(arg) : null;
    case '$ne': {
      if (!isScalar(arg)) return null;
      const eq = equalsTest(arg);
      return (v, present) => !eq(v, present);
    }
    case '$gt':
    case '$gte':
    case '$lt':
    case '$lte':
      return isScalar(arg) ? comparison(op, arg) : null;
    case '$in':
    case '$nin': {
      if (!Array.isArray(arg) || !arg.every(isScalar)) return null;
      // A Set: a long list (up to MAX_FILTER_LIST values) costs one lookup per entry. null matches null and missing.
      const values = new Set<Scalar>(arg as Scalar[]);
      values.delete(null);
      const hasNull = (arg as Scalar[]).includes(null);
      const any: ScalarTest = (v) => (hasNull && (v === null || v === undefined)) || values.has(v as Scalar);
      return op === '$in' ? any : (v, present) => !any(v, present);
    }
    case '$exists':
      return typeof arg === 'boolean' ? (_v, present) => present === arg : null;
    case '$regex': {
      const regex = compileRegex(arg, owner.$options, '$regex');
      return (v) => typeof v === 'string' && regex.test(v);
    }
    case '$options':
      return () => true;
    case '$like':
    case '$iLike':
      return typeof arg === 'string' || typeof arg === 'number' ? like(String(arg), op === '$iLike') : null;
    default:
      return null;
  }
}

const hasOwn = Object.prototype.hasOwnProperty;

/**
 * Reads a path the way sift does for plain objects; FALLBACK where sift's array/null rules would apply.
 * `present` (own property) is only computed when an `$exists` needs it.
 */
function compileGetter(
  column: string,
  needPresent: boolean,
): ((data: Record<string, unknown>) => { value: unknown; present: boolean } | typeof FALLBACK) | null {
  const segments = column.split('.');
  if (segments.some((s) => s === '' || s in Object.prototype || /^\d+$/.test(s))) return null;
  const result = { value: undefined as unknown, present: false };
  const last = segments[segments.length - 1]!;
  const depth = segments.length - 1;
  return (data) => {
    let node: unknown = data;
    for (let i = 0; i < depth; i++) {
      node = (node as Record<string, unknown>)[segments[i]!];
      if (node === null || typeof node !== 'object' || Array.isArray(node)) return FALLBACK;
    }
    const value = (node as Record<string, unknown>)[last];
    if (value !== null && typeof value === 'object') return FALLBACK;
    result.value = value;
    result.present = needPresent && value !== undefined && hasOwn.call(node, last);
    return result;
  };
}

/** Compiles the fast path, or null when the query is not of the supported shape. */
export function compileFastWhere(
  query: Record<string, unknown>,
  full: (data: unknown) => boolean,
  like: Like,
): ((data: Record<string, unknown>) => boolean) | null {
  const columns: { get: NonNullable<ReturnType<typeof compileGetter>>; test: ScalarTest }[] = [];
  for (const column of Object.keys(query)) {
    if (column.startsWith('$')) return null;
    const condition = query[column];
    const get = compileGetter(column, isPlainObject(condition) && '$exists' in condition);
    if (!get) return null;
    let test: ScalarTest | null;
    if (isScalar(condition)) test = equalsTest(condition);
    else if (isPlainObject(condition) && Object.keys(condition).length > 0 && Object.keys(condition).every((k) => k.startsWith('$'))) {
      const tests: ScalarTest[] = [];
      for (const op of Object.keys(condition)) {
        const t = operatorTest(op, condition[op], condition, like);
        if (!t) return null;
        tests.push(t);
      }
      test = tests.length === 1 ? tests[0]! : (v, present) => tests.every((t) => t(v, present));
    } else return null;
    columns.push({ get, test });
  }
  if (columns.length === 0) return null;
  return (data) => {
    for (let i = 0; i < columns.length; i++) {
      const column = columns[i]!;
      const read = column.get(data);
      if (read === FALLBACK) return full(data);
      if (!column.test(read.value, read.present)) return false;
    }
    return true;
  };
}
