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
/**
 * How an equality-like operator (`$eq`, plain, `$in`, `$ne`, `$nin`) reads an array of scalars: sift tests each
 * element and the array itself, and a scalar operand never equals an array, so `$eq`/`$in` match when an element
 * does, and `$ne`/`$nin` when none does (`match` is the positive test). Without it, arrays go to sift, whose
 * `$in` compares each element with each listed value: a 10,000-value list over 100 elements, ≈ 100 ms an entry.
 */
interface ElementWise {
  match: (value: unknown) => boolean;
  negated: boolean;
}
type OperatorTest = ScalarTest & { elementWise?: ElementWise };
const elementWise = (test: ScalarTest, match: (value: unknown) => boolean, negated: boolean): OperatorTest =>
  Object.assign(test, { elementWise: { match, negated } });

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

function operatorTest(op: string, arg: unknown, owner: Record<string, unknown>, like: Like): OperatorTest | null {
  switch (op) {
    case '$eq': {
      if (!isScalar(arg)) return null;
      const eq = equalsTest(arg);
      return elementWise(eq, (v) => eq(v, true), false);
    }
    case '$ne': {
      if (!isScalar(arg)) return null;
      const eq = equalsTest(arg);
      return elementWise(
        (v, present) => !eq(v, present),
        (v) => eq(v, true),
        true,
      );
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
      const any = (v: unknown) => (hasNull && (v === null || v === undefined)) || values.has(v as Scalar);
      return op === '$in' ? elementWise(any, any, false) : elementWise((v) => !any(v), any, true);
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
  arrays: boolean,
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
    if (value !== null && typeof value === 'object' && !(arrays && Array.isArray(value))) return FALLBACK;
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
  const columns: { get: NonNullable<ReturnType<typeof compileGetter>>; test: ScalarTest; arrayTest: ArrayTest | null }[] = [];
  for (const column of Object.keys(query)) {
    if (column.startsWith('$')) return null;
    const condition = query[column];
    const tests: OperatorTest[] = [];
    if (isScalar(condition)) tests.push(operatorTest('$eq', condition, {}, like)!);
    else if (isPlainObject(condition) && Object.keys(condition).length > 0 && Object.keys(condition).every((k) => k.startsWith('$'))) {
      for (const op of Object.keys(condition)) {
        const t = operatorTest(op, condition[op], condition, like);
        if (!t) return null;
        tests.push(t);
      }
    } else return null;
    const arrayTest = compileArrayTest(tests);
    const get = compileGetter(column, isPlainObject(condition) && '$exists' in condition, arrayTest !== null);
    if (!get) return null;
    const test: ScalarTest = tests.length === 1 ? tests[0]! : (v, present) => tests.every((t) => t(v, present));
    columns.push({ get, test, arrayTest });
  }
  if (columns.length === 0) return null;
  return (data) => {
    for (let i = 0; i < columns.length; i++) {
      const column = columns[i]!;
      const read = column.get(data);
      if (read === FALLBACK) return full(data);
      if (Array.isArray(read.value)) {
        const matched = column.arrayTest!(read.value);
        if (matched === FALLBACK) return full(data);
        if (!matched) return false;
      } else if (!column.test(read.value, read.present)) return false;
    }
    return true;
  };
}

type ArrayTest = (array: unknown[]) => boolean | typeof FALLBACK;

/** An array of scalars against equality-like operators (`ElementWise`); null when an operator is of another kind. */
function compileArrayTest(tests: readonly OperatorTest[]): ArrayTest | null {
  const parts: ElementWise[] = [];
  for (const t of tests) {
    if (!t.elementWise) return null;
    parts.push(t.elementWise);
  }
  return (array) => {
    for (let i = 0; i < array.length; i++) {
      const element = array[i];
      if (element !== null && typeof element === 'object') return FALLBACK; // nested arrays and objects: sift's rules
    }
    for (const { match, negated } of parts) {
      let some = false;
      for (let i = 0; i < array.length && !some; i++) some = match(array[i]);
      if (some === negated) return false;
    }
    return true;
  };
}
