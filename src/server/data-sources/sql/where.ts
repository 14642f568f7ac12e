import { isPlainObject } from '../query/errors.js';
import { ENTRY_COLUMNS, FALSE, TRUE, and, not, or, sizeOf, type Cond, type EntryColumn, type ValueTest } from './conditions.js';
import { translateFilters } from './filters.js';
import { pathSegments } from './paths.js';

/**
 * Translates a checked `where` (compileQuery accepted it) into a Cond, or null when some part has no exact
 * SQL equivalent (the JS evaluator then runs the query). What sift does, and what the dialects render:
 *
 * - A key `a.b.c` is a path. sift walks it from the entry's data: an array met anywhere on the way (or at the
 *   end) is flattened, every element (at any depth of nested arrays) continuing on the same path; reading a
 *   key of an array gives nothing; a null, missing or scalar value before the end stops the walk and yields
 *   "null" (missing). Each operator tests every value reached: `$eq`, `$in`, `$gt`… match when some value
 *   does, `$ne` and `$nin` when none does, `$exists` when the last key is present somewhere.
 * - Equality is type-strict (3 ≠ '3', true ≠ 1) and `null` matches null and missing; `$gt`/`$gte`/`$lt`/
 *   `$lte` match only values of the operand's type (numbers, or strings compared by UTF-16 code units).
 * - Several operators on one path are tested independently (each may be satisfied by a different element);
 *   `$not: { ops }` is the negation of `ops` on that path; top-level `$and`/`$or`/`$nor` combine queries.
 * - `$id`, `$order`, `$createdAt`, `$updatedAt` (top level only) test entry columns.
 *
 * `$like`/`$iLike` translate under the conditions of `like` below, top-level `$filters` under those of filters.ts.
 *
 * Refused (null): `$regex`, `$like`/`$iLike` otherwise, `$mod`, `$all`, `$size`, `$type`, `$elemMatch`, other `$filters`,
 * object or array operands (whole-value equality), booleans or null as `$gt`… operands, strings holding
 * NUL or surrogates (and, for `$gt`…, characters from U+D800 up, where UTF-8 and UTF-16 orders differ),
 * paths with numeric, prototype-member or unusual segments (paths.ts), and statements past MAX_SIZE.
 */
export const MAX_SIZE = 500;

type Scalar = string | number | boolean | null;
const isScalar = (value: unknown): value is Scalar =>
  value === null || typeof value === 'string' || typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value));

/** Strings SQL compares exactly as JS does: no NUL (PostgreSQL text refuses it) and no surrogates. */
const safeString = (value: string) => !/[\u0000\uD800-\uDFFF]/.test(value);
/** For ordering: below U+D800, where UTF-8 byte order (SQLite BINARY, PostgreSQL "C") equals UTF-16 order. */
const orderableString = (value: string) => !/[\u0000\uD800-\uFFFF]/.test(value);

type Target = { kind: 'path'; segments: string[] } | { kind: 'column'; column: EntryColumn; type: 'number' | 'text' };

/** Equality with one of `values` (null included) on the target. */
function equalsAny(target: Target, values: readonly Scalar[]): Cond | null {
  const test: Extract<ValueTest, { kind: 'in' }> = { kind: 'in', strings: [], numbers: [], booleans: [] };
  let withNull = false;
  for (const value of values) {
    if (!isScalar(value)) return null;
    if (value === null) withNull = true;
    else if (typeof value === 'string') {
      if (!safeString(value)) return null;
      test.strings.push(value);
    } else if (typeof value === 'number') test.numbers.push(value);
    else test.booleans.push(value);
  }
  if (target.kind === 'column') {
    // Entry columns are never null; numbers equal only numbers, text only strings.
    const own = target.type === 'number' ? { ...test, strings: [], booleans: [] } : { ...test, numbers: [], booleans: [] };
    if (own.strings.length + own.numbers.length === 0) return FALSE;
    return { kind: 'column', column: target.column, test: own };
  }
  const items: Cond[] = [];
  if (withNull) items.push({ kind: 'path', segments: target.segments, test: { kind: 'null' } });
  if (test.strings.length + test.numbers.length + test.booleans.length > 0) items.push({ kind: 'path', segments: target.segments, test });
  return items.length === 0 ? FALSE : or(items);
}

function compare(target: Target, op: '>' | '>=' | '<' | '<=', value: unknown): Cond | null {
  if (typeof value === 'string') {
    if (!orderableString(value)) return null;
  } else if (typeof value !== 'number' || !Number.isFinite(value)) return null;
  if (target.kind === 'column') {
    if ((target.type === 'number') !== (typeof value === 'number')) return FALSE;
    return { kind: 'column', column: target.column, test: { kind: 'cmp', op, value } };
  }
  return { kind: 'path', segments: target.segments, test: { kind: 'cmp', op, value } };
}

const COMPARISONS = { $gt: '>', $gte: '>=', $lt: '<', $lte: '<=' } as const;

/** Every character of a JS number's text (`String(n)` of a JSON number): `-1.5e-7`, `1e+21`. */
const NUMBER_CHARS = new Set('0123456789.+-e');

/**
 * `$like`/`$iLike` (src/filter/like.ts) as a `like` test, when SQL gives exactly its answer: on a data path; the
 * pattern without NUL or surrogates; with a `%`, no `_` (SQL's `_` is one code point, like.ts's one UTF-16 code
 * unit) and none of U+FFFD–U+FFFF (GLOB reads U+FFFE, U+FFFF and lone surrogates as U+FFFD); `$iLike` with an ASCII pattern (like.ts folds non-ASCII letters too, SQL's ASCII `upper` does not, and
 * no non-ASCII letter folds to ASCII); and some character outside a number's text, so that no number (like.ts
 * tests numbers as their text) can match: the SQL then tests strings only.
 */
function like(target: Target, pattern: unknown, caseInsensitive: boolean): Cond | null {
  if (target.kind !== 'path' || typeof pattern !== 'string' || !safeString(pattern)) return null;
  const wildcard = pattern.includes('%');
  if ((wildcard && /[_\uFFFD-\uFFFF]/.test(pattern)) || (caseInsensitive && !/^[\x00-\x7f]*$/.test(pattern))) return null;
  const folded = caseInsensitive ? pattern.toUpperCase() : pattern;
  if (![...folded].some((c) => c !== '%' && !NUMBER_CHARS.has(caseInsensitive ? c.toLowerCase() : c))) return null;
  return { kind: 'path', segments: target.segments, test: { kind: 'like', pattern: folded.replace(/%{2,}/g, '%'), wildcard, caseInsensitive } };
}

function operator(target: Target, op: string, arg: unknown): Cond | null {
  switch (op) {
    case '$eq':
      return equalsAny(target, [arg as Scalar]);
    case '$ne': {
      const eq = equalsAny(target, [arg as Scalar]);
      return eq && not(eq);
    }
    case '$in':
    case '$nin': {
      if (!Array.isArray(arg)) return null;
      const any = equalsAny(target, arg as Scalar[]);
      return any && (op === '$in' ? any : not(any));
    }
    case '$gt':
    case '$gte':
    case '$lt':
    case '$lte':
      return compare(target, COMPARISONS[op], arg);
    case '$like':
    case '$iLike':
      return like(target, arg, op === '$iLike');
    case '$exists': {
      if (typeof arg !== 'boolean') return null;
      const exists: Cond = target.kind === 'column' ? TRUE : { kind: 'path', segments: target.segments, test: { kind: 'exists' } };
      return arg ? exists : not(exists);
    }
    case '$not': {
      const inner = isPlainObject(arg) ? valueCondition(target, arg) : null;
      return inner && Object.keys(arg as object).length > 0 ? not(inner) : null;
    }
    default:
      return null;
  }
}

/**
 * The condition of one `where` value on a target: a scalar (equality) or an object of operators. `lax`: an
 * operator that does not translate is left out (the Cond is then implied by the value, not equal to it).
 */
function valueCondition(target: Target, value: unknown, lax = false): Cond | null {
  if (isScalar(value)) return equalsAny(target, [value]);
  if (!isPlainObject(value)) return null;
  const ops = Object.keys(value);
  if (ops.length === 0 || !ops.every((op) => op.startsWith('$'))) return null;
  const items: Cond[] = [];
  for (const op of ops) {
    const item = operator(target, op, value[op]);
    if (item) items.push(item);
    else if (!lax) return null;
  }
  return items.length === 0 ? null : and(items);
}

/**
 * The Cond of a query object, or null. `lax` (impliedWhere): a key that does not translate is left out of the
 * AND instead of refusing the whole query, so the Cond is implied by the query; `$nor` and `$not` (negations)
 * are then translated exactly or left out, and an `$or` only when each of its items gives a Cond.
 */
function query(where: Record<string, unknown>, top: boolean, lax = false): Cond | null {
  const items: Cond[] = [];
  for (const key of Object.keys(where)) {
    const value = where[key];
    let item: Cond | null;
    if (key === '$and' || key === '$or' || key === '$nor') {
      if (!Array.isArray(value) || value.length === 0) return null;
      const parts: Cond[] = [];
      let whole = true;
      for (const sub of value) {
        const part = isPlainObject(sub) ? query(sub, false, lax && key !== '$nor') : null;
        if (part) parts.push(part);
        else whole = false;
      }
      // Lax: an `$and` keeps the items that translate; an `$or` or `$nor` needs all of them.
      if (!whole && !(lax && key === '$and')) item = null;
      else if (parts.length === 0) item = null;
      else item = key === '$and' ? and(parts) : key === '$or' ? or(parts) : not(or(parts));
    } else if (top && key === '$filters') {
      if (value === null || value === undefined || (Array.isArray(value) && value.length === 0)) continue;
      item = translateFilters(value, lax);
    } else if (top && (key === '$id' || key === '$order' || key === '$createdAt' || key === '$updatedAt')) {
      const field = ENTRY_COLUMNS[key.slice(1) as keyof typeof ENTRY_COLUMNS];
      item = valueCondition({ kind: 'column', column: field.column, type: field.type }, value);
    } else if (key.startsWith('$')) {
      if (!lax) return null;
      continue;
    } else {
      const segments = pathSegments(key);
      item = segments && valueCondition({ kind: 'path', segments }, value, lax);
    }
    if (item) items.push(item);
    else if (!lax) return null;
  }
  // An empty query (or only empty `$filters`) matches everything; lax, a query of which nothing translates gives null.
  if (items.length === 0) return lax && Object.keys(where).length > 0 ? null : TRUE;
  return and(items);
}

/** The Cond of a checked `where` (undefined/null: everything), or null when it is not translatable. */
export function translateWhere(where: unknown): Cond | null {
  if (where === undefined || where === null) return TRUE;
  if (!isPlainObject(where)) return null;
  const cond = query(where, true);
  return cond && sizeOf(cond) <= MAX_SIZE ? cond : null;
}

/**
 * A Cond that every entry matching the checked `where` meets: the parts of it that translate, the others left out
 * of their AND (`$filters` that do not translate, `$regex`, `$elemMatch`…), or null when no part constrains the entries. Scans
 * (scan-select.ts, scan-delete.ts) let the database pick the candidates with it, then run the whole `where` on them.
 */
export function impliedWhere(where: unknown): Cond | null {
  if (!isPlainObject(where)) return null;
  const cond = query(where, true, true);
  if (!cond || (cond.kind === 'const' && cond.value) || sizeOf(cond) > MAX_SIZE) return null;
  return cond;
}
