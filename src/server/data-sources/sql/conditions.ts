/**
 * The translatable subset of `where`, as a small tree the dialects render to SQL (where.ts builds it).
 * Every node has sift's meaning exactly; see where.ts for how sift walks a path.
 */

/** A test of one value reached on a path (never `null`: see `null`). */
export type ValueTest =
  /** sift equality with null: the value is null or missing (or the path breaks before its end). */
  | { kind: 'null' }
  /** sift equality with any of these non-null scalars (type-strict: 3 is not '3', true is not 1). */
  | { kind: 'in'; strings: string[]; numbers: number[]; booleans: boolean[] }
  /** `$gt`…`$lte` with a number (matches numbers only) or a string (matches strings only, UTF-16 order). */
  | { kind: 'cmp'; op: '>' | '>=' | '<' | '<='; value: number | string }
  /** `$exists: true`: the last key of the path is present (any value, null included). */
  | { kind: 'exists' }
  /**
   * `$like`/`$iLike` (src/filter/like.ts) on strings: `wildcard` a LIKE pattern whose only wildcard is `%` (runs
   * collapsed), else a substring; `caseInsensitive` with an ASCII pattern, upper-cased here, tested against the
   * value upper-cased in ASCII only. where.ts makes it only when no number's text can match (numbers never do).
   */
  | { kind: 'like'; pattern: string; wildcard: boolean; caseInsensitive: boolean };

/**
 * A `$filters` condition (query/filters.ts) on the value compileDataPath reads (sql/filters.ts makes them only for
 * operands whose answer SQL gives exactly). Except `empty`, an array value matches when one of its elements does.
 * `booleans`: the booleans that match (decided from the operand alone).
 */
import type { DateCheck } from '../query/dates.js';

export type FilterTest =
  /** null, missing, '' or [] (the value itself, not its elements). */
  | { kind: 'empty' }
  /**
   * Case-insensitive equality of the element's text with one of `texts` (lowercased, non-numeric), or of its number
   * with one of `numbers` (a numeric element: a JSON number, or a string numericValue reads); `nulls`: null matches.
   * `caseful`: more texts, whose lowercase only JS's full `toLowerCase` gives (sql/filters.ts).
   */
  | { kind: 'equals'; texts: string[]; caseful: string[]; numbers: number[]; nulls: boolean; booleans: boolean[] }
  /**
   * The element's text (objects and arrays: their JSON), lowercased, holds `needle` (lowercased; no number's text
   * can); `caseful`: a needle only JS's full `toLowerCase` folds to (sql/filters.ts).
   */
  | { kind: 'contains'; needle: string; caseful: boolean; booleans: boolean[] }
  /**
   * The element between the bounds: by UTF-16 code units of its text (numbers: their JSON text; objects, arrays:
   * their JSON), except that a bound with `num` (a numeric operand) compares a numeric element's number with it.
   */
  | {
      kind: 'range';
      from: FilterBound | undefined;
      to: FilterBound | undefined;
      booleans: boolean[];
    }
  /**
   * A date condition (query/filters.ts `dateChecks`): the value itself (an array is not a date) passes every check,
   * each the sign of value − target that dates.ts `datePasses` compares; `time`: the operands are times of day.
   */
  | { kind: 'date'; time: boolean; checks: DateCheck[] };

/** A `$filters` comparison bound: its text, and its number when the operand is numeric (numericValue). */
export interface FilterBound {
  text: string;
  num?: number;
  strict: boolean;
}

/** Entry fields a `where` (`$id`, `$order`, `$createdAt`, `$updatedAt`) or `order` can name, by column. */
export type EntryColumn = 'id' | 'sort_order' | 'created_at' | 'updated_at';
export const ENTRY_COLUMNS = {
  id: { column: 'id', type: 'number' },
  order: { column: 'sort_order', type: 'number' },
  createdAt: { column: 'created_at', type: 'text' },
  updatedAt: { column: 'updated_at', type: 'text' },
} as const satisfies Record<string, { column: EntryColumn; type: 'number' | 'text' }>;

export type Cond =
  | { kind: 'const'; value: boolean }
  | { kind: 'and' | 'or'; items: Cond[] }
  | { kind: 'not'; item: Cond }
  /** Some value sift reaches on the data path matches `test` (for `exists`: the path's last key is present). */
  | { kind: 'path'; segments: string[]; test: ValueTest }
  /** A `$filters` test of the value at `segments` as filters.ts reads it (a top-level key `a.b` first, then objects only). */
  | { kind: 'filter'; segments: string[]; test: FilterTest }
  /** The entry column's value matches `test` (`in` with numbers or strings of the column's type, or `cmp`). */
  | { kind: 'column'; column: EntryColumn; test: Extract<ValueTest, { kind: 'in' } | { kind: 'cmp' }> };

export const TRUE: Cond = { kind: 'const', value: true };
export const FALSE: Cond = { kind: 'const', value: false };

export const and = (items: Cond[]): Cond => (items.length === 1 ? items[0]! : { kind: 'and', items });
export const or = (items: Cond[]): Cond => (items.length === 1 ? items[0]! : { kind: 'or', items });
export const not = (item: Cond): Cond => ({ kind: 'not', item });

/** The first segments of every data path in `cond` (the top-level columns it reads). */
export function columnsOf(cond: Cond, into = new Set<string>()): Set<string> {
  if (cond.kind === 'path') into.add(cond.segments[0]!);
  else if (cond.kind === 'filter') {
    // A filter on `a.b` reads the top-level key `a.b` first.
    into.add(cond.segments[0]!);
    into.add(cond.segments.join('.'));
  } else if (cond.kind === 'and' || cond.kind === 'or') for (const item of cond.items) columnsOf(item, into);
  else if (cond.kind === 'not') columnsOf(cond.item, into);
  return into;
}

/** Number of SQL parameters and path tests, to keep generated statements small. */
export function sizeOf(cond: Cond): number {
  switch (cond.kind) {
    case 'const':
      return 1;
    case 'and':
    case 'or':
      return cond.items.reduce((n, item) => n + sizeOf(item), 1);
    case 'not':
      return 1 + sizeOf(cond.item);
    case 'filter':
      return cond.test.kind === 'equals' ? 1 + cond.test.texts.length + cond.test.caseful.length + cond.test.numbers.length : 1;
    default:
      return cond.test.kind === 'in' ? 1 + cond.test.strings.length + cond.test.numbers.length + cond.test.booleans.length : 1;
  }
}
