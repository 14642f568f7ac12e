import { isPlainObject } from '../query/errors.js';
import { dateChecks } from '../query/filters.js';
import { numericValue, textOf } from '../query/values.js';
import { FALSE, and, not, type Cond, type FilterBound, type FilterTest } from './conditions.js';
import { casefulNeedle } from './case-fold.js';
import { pathSegments } from './paths.js';

/**
 * `where.$filters` (query/filters.ts) as Conds, for the conditions and operands whose SQL answer is exactly
 * filters.ts's whatever the data (docs/sql.md, "`$filters`"); null for the others (the JS evaluator answers):
 *
 * - The column is read as compileDataPath reads it, not as sift walks a path: a top-level key holding the whole
 *   dotted name wins, then the dots walk objects only (an array on the way gives undefined). An array at the end
 *   is tested element by element (one level: a nested array is tested as its JSON text, as textOf does).
 * - Numeric operands (numbers, numeric strings like "05", " 7 ", "1e3") of `==`, `!=`, `oneof`, `>`, `>=`, `<`,
 *   `<=` and `between`: filters.ts compares a numeric element (a JSON number, or a string numericValue reads: its
 *   decimal syntax, finite) with them as numbers, any other element by its text. The dialects read a string's
 *   number exactly as numericValue does (SQLite: numericValue itself, SQLITE_NUMBER_FUNCTION; PostgreSQL: the
 *   same syntax by a regular expression, then `float8`, correctly rounded like `Number()`; a string past the
 *   double range makes PostgreSQL refuse the statement, and the JS evaluator answers). With a non-numeric operand
 *   no number's text can equal it, and comparisons are of text only. `contains` stays textual (see below).
 * - `==`, `!=`, `oneof`, `contains`, `notcontains` ignore case with JS's full `toLowerCase`; SQL's `lower()`
 *   folds ASCII only. An operand whose every non-ASCII character is caseless (`toLowerCase()` and `toUpperCase()`
 *   leave it as it is, and it is not U+0307) is compared by `lower()`: then only ASCII letters of the operand can
 *   meet a folded character, and the only non-ASCII characters JS lowercases to ASCII are U+212A (K → k) and
 *   U+0130 (İ → i + U+0307), which the dialects replace before `lower()` (test/integration/sql-filters.test.ts
 *   checks the claim over every code point). Any other operand (`é`, `ß`, `ǅ`, Cyrillic…) is `caseful`: SQLite
 *   folds the element with JS's own `toLowerCase` (SQLITE_LOWER_FUNCTION), PostgreSQL with `translate()` of every
 *   character JS lowercases to one of the operand's (case-fold.ts); operands holding σ or ς (Final_Sigma), NUL,
 *   lone surrogates or U+FFFD are left to the JS evaluator.
 * - `contains` tests numbers, objects and arrays by their JSON text (the stored text is JSON.stringify's, numbers
 *   as `String(n)`, which SQLite's `->` and PostgreSQL's `json` give back as it is); booleans are decided here
 *   (`'true'`, `'false'`).
 * - `>`, `>=`, `<`, `<=`, `between` with strings (characters below U+D800, where UTF-8 and UTF-16 orders agree),
 *   numbers or booleans (their text); `null` operands match nothing.
 * - The date conditions (query/filters.ts `dateChecks`: the value itself, read by dates.ts) translate to the sign
 *   of each check, computed by SQL functions that read dates as dates.ts does: SQLite's is dates.ts `datePasses`
 *   itself (SQLITE_DATE_FUNCTION, one call per entry); PostgreSQL's is the same reading in PL/pgSQL (migration 0015), which refuses
 *   (22023) a time-of-day condition on an epoch number that is a fraction or past 2^63, and the JS evaluator
 *   answers. An operand past Date's range (a NaN target) is left out.
 */

/** What `Number()` reads as a number: then filters.ts compares as numbers. */
const isNumeric = (value: unknown) => !Number.isNaN(numericValue(value));

/** A text whose case folding SQL can reproduce (see above); no NUL (PostgreSQL text) and no surrogates. */
function foldable(text: string): boolean {
  for (const c of text) {
    if (c.charCodeAt(0) < 0x80) {
      if (c === '\u0000') return false;
      continue;
    }
    if ((c.length === 1 && c >= '\uD800' && c <= '\uDFFF') || c === '\u0307' || c.toLowerCase() !== c || c.toUpperCase() !== c) return false;
  }
  return true;
}

const BOOLEANS = [true, false] as const;

/**
 * Equality (case-insensitive) with any of `options`; null among them matches null and missing. A numeric option
 * matches numeric elements of its number: no other element's text can equal its text (lowercased, that text has
 * the decimal syntax, so the element would be numeric, of the same number).
 */
function equals(options: readonly unknown[]): FilterTest | null {
  const texts: string[] = [];
  const caseful: string[] = [];
  const numbers: number[] = [];
  let nulls = false;
  for (const option of options) {
    if (option === null) {
      nulls = true;
      continue;
    }
    if (typeof option !== 'string' && typeof option !== 'boolean' && typeof option !== 'number') return null;
    if (isNumeric(option)) {
      numbers.push(numericValue(option));
      continue;
    }
    if (typeof option === 'number') return null;
    const text = String(option).toLowerCase();
    // A text starting like an object's or array's JSON could equal one (textOf of an element is its JSON).
    if (text.startsWith('{') || text.startsWith('[')) return null;
    if (foldable(text)) texts.push(text);
    else if (casefulNeedle(text)) caseful.push(text);
    else return null;
  }
  return { kind: 'equals', texts, caseful, numbers, nulls, booleans: BOOLEANS.filter((b) => texts.includes(String(b))) };
}

/** filters.ts's option list of `oneof`: an array, or a comma-separated string. */
function oneofOptions(value: unknown): unknown[] | null {
  if (Array.isArray(value)) return value;
  if (typeof value !== 'string') return null;
  return value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

function contains(value: unknown): FilterTest | null {
  if (typeof value !== 'string' && typeof value !== 'boolean' && typeof value !== 'number') return null;
  const needle = textOf(value)!.toLowerCase();
  const caseful = !foldable(needle);
  if (caseful && !casefulNeedle(needle)) return null;
  return { kind: 'contains', needle, caseful, booleans: BOOLEANS.filter((b) => String(b).includes(needle)) };
}

/** A comparison bound (its text as compareTo's `textOf`, its number when numeric), or null when it does not translate. */
function boundOf(value: unknown, strict: boolean): FilterBound | null {
  if (typeof value === 'boolean') return { text: String(value), strict };
  if (typeof value === 'number') return Number.isFinite(value) ? { text: String(value), num: value, strict } : null;
  // Not orderable by UTF-8 as by UTF-16 (see above).
  if (typeof value !== 'string' || /[\u0000\uD800-\uFFFF]/.test(value)) return null;
  return isNumeric(value) ? { text: value, num: numericValue(value), strict } : { text: value, strict };
}

type Bound = FilterBound;

const meets = (text: string, from: Bound | undefined, to: Bound | undefined) =>
  (!from || (from.strict ? text > from.text : text >= from.text)) && (!to || (to.strict ? text < to.text : text <= to.text));

function range(from: Bound | undefined, to: Bound | undefined): FilterTest {
  return { kind: 'range', from, to, booleans: BOOLEANS.filter((b) => meets(String(b), from, to)) };
}

/** A `between` bound is absent when undefined, null or ''. */
const absent = (value: unknown) => value === undefined || value === null || value === '';

/**
 * A date condition's checks, or null when its operands are bad, out of Date's range (a NaN target) or an epoch
 * number whose target is no safe integer (PostgreSQL compares with a bigint).
 */
function dates(filter: Record<string, unknown>): FilterTest | null {
  try {
    const { time, checks } = dateChecks(filter, 'filter');
    return checks.every((check) => Number.isSafeInteger(check.target)) ? { kind: 'date', time, checks } : null;
  } catch {
    return null;
  }
}

/** The test of one condition, FALSE when it matches nothing, or null. */
function test(condition: string, value: unknown, filter: Record<string, unknown>): FilterTest | typeof FALSE | null {
  switch (condition) {
    case '==':
    case '!=':
      return equals([value]);
    case 'oneof': {
      const options = oneofOptions(value);
      return options && equals(options);
    }
    case 'contains':
    case 'notcontains':
      return contains(value);
    case 'empty':
    case 'notempty':
      return { kind: 'empty' };
    case 'dateis':
    case 'datebefore':
    case 'dateafter':
    case 'datebetween':
      return dates(filter);
    case '>':
    case '>=':
    case '<':
    case '<=': {
      // compareTo(null) compares nothing: such a filter matches no entry.
      if (value === null) return FALSE;
      const bound = boundOf(value, condition.length === 1);
      if (bound === null) return null;
      return condition[0] === '>' ? range(bound, undefined) : range(undefined, bound);
    }
    case 'between': {
      if (!isPlainObject(value)) return null;
      const from = absent(value.from) ? undefined : boundOf(value.from, false);
      const to = absent(value.to) ? undefined : boundOf(value.to, false);
      if (from === null || to === null || (from === undefined && to === undefined)) return null;
      return range(from, to);
    }
    default:
      return null;
  }
}

const NEGATED = new Set(['!=', 'notcontains', 'notempty']);

/** One checked filter (`{ column, condition, value }`) as a Cond, or null. */
function translateFilter(filter: unknown): Cond | null {
  if (!isPlainObject(filter) || typeof filter.column !== 'string' || typeof filter.condition !== 'string') return null;
  const column = filter.column.startsWith('data.') && filter.column.length > 5 ? filter.column.slice(5) : filter.column;
  const segments = pathSegments(column);
  if (!segments) return null;
  const made = test(filter.condition, filter.value, filter);
  if (!made) return null;
  const cond: Cond = made === FALSE ? FALSE : { kind: 'filter', segments, test: made as FilterTest };
  return NEGATED.has(filter.condition) ? not(cond) : cond;
}

/**
 * The Cond of a checked `$filters` list (compileFilters accepted it), or null when some filter does not translate.
 * `lax` (impliedWhere): those are left out instead; null when none is left.
 */
export function translateFilters(filters: unknown, lax: boolean): Cond | null {
  if (!Array.isArray(filters)) return null;
  const items: Cond[] = [];
  for (const filter of filters) {
    const cond = translateFilter(filter);
    if (cond) items.push(cond);
    else if (!lax) return null;
  }
  return items.length === 0 ? null : and(items);
}
