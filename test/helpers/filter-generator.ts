import { FILTER_CONDITIONS } from '../../src/server/data-sources/query/filters.js';
import { queryBody, type Rng } from './query-generator.js';

/**
 * `where.$filters` for the SQL differential test (test/integration/sql-differential.test.ts): every condition of
 * query/filters.ts with operands of every type (numbers, numeric strings, booleans, null, empty strings, arrays for
 * `oneof`, text in every case, non-ASCII letters that fold oddly, emoji), on columns holding the same mix, read
 * through objects, arrays and a top-level key with a dot.
 */
const pick = <T>(rng: Rng, items: readonly T[]): T => items[Math.floor(rng() * items.length)]!;
const int = (rng: Rng, min: number, max: number) => min + Math.floor(rng() * (max - min + 1));

/** Operands and column values alike. */
export const FILTER_VALUES: readonly unknown[] = [
  0,
  5,
  7,
  1000,
  -1.5,
  0.1,
  1e21,
  '05',
  '5',
  '1e3',
  ' 7 ',
  '7.0',
  '-0',
  '',
  ' ',
  'abc',
  'ABC',
  'Abc d',
  'bc',
  'x',
  'true',
  'TRUE',
  'rue',
  'false',
  'null',
  'É',
  'é',
  'ß',
  'SS',
  'ss',
  'İ',
  'i̇',
  'i',
  'I',
  'K',
  'k',
  '\u212a',
  'ſ',
  'Σ',
  'σ',
  '😀',
  '😀x',
  '名前',
  '2024-01-05',
  '2024-01-05 09:30',
  '2023-12-31',
  '09:30',
  'a,b',
  '{"x":1}',
  '[1]',
  '{',
  'x:',
  true,
  false,
  null,
];

/** A value of a filter column: a scalar most of the time, else an array (nested now and then) or an object. */
function filterValue(rng: Rng, depth = 2): unknown {
  const r = rng();
  if (depth <= 0 || r < 0.65) return pick(rng, FILTER_VALUES);
  if (r < 0.85) return Array.from({ length: int(rng, 0, 3) }, () => filterValue(rng, depth - 1));
  return { x: filterValue(rng, depth - 1), ...(rng() < 0.4 ? { K: pick(rng, FILTER_VALUES) } : {}) };
}

/**
 * Columns for `$filters` added to an entry's data (from their own random stream, so the other columns stay as the
 * seed makes them): `f` of every type; `g.h` behind an object or an array (filters.ts reads no array on the way);
 * `p.q` both as a top-level key with a dot and as `p: { q }` (the top-level key wins).
 */
export function filterColumns(rng: Rng): Record<string, unknown> {
  const data: Record<string, unknown> = {};
  if (rng() < 0.9) data.f = filterValue(rng);
  const r = rng();
  if (r < 0.5) data.g = { h: filterValue(rng) };
  else if (r < 0.7) data.g = [{ h: filterValue(rng) }];
  else if (r < 0.8) data.g = filterValue(rng);
  if (rng() < 0.5) data.p = { q: filterValue(rng, 1) };
  if (rng() < 0.3) data['p.q'] = filterValue(rng, 1);
  // Columns named like members of other prototypes than Object's: own reads on the data object (sql/paths.ts).
  if (rng() < 0.7) data.at = rng() < 0.8 ? filterValue(rng) : [filterValue(rng, 1)];
  if (rng() < 0.6) data.length = filterValue(rng);
  if (rng() < 0.5) data.map = rng() < 0.7 ? { x: filterValue(rng, 1) } : filterValue(rng, 1);
  return data;
}

const COLUMNS = [
  'f',
  'f',
  'f',
  'data.f',
  'g.h',
  'g',
  'p.q',
  'p',
  's',
  'n',
  'b',
  'd',
  'tags',
  'obj',
  'obj.x',
  'deep.a.b',
  'mixed',
  'nope',
  'tags.0',
  'g.length',
  'at',
  'length',
  'map.x',
  'map.at',
];
const SCALAR_OPERANDS = FILTER_VALUES;
const TEXT_OPERANDS = FILTER_VALUES.filter((v) => v !== null);
const TEXT_BOUNDS = ['a', 'abc', 'b', 'x', 'true', 'TRUE', '2024-01-05', '2023-12-31', '{', 'É', '😀', 'null', true, false];
const DATES = ['2024-01-05', '2023-12-31', '2024-01-05 09:30', '09:30'];

function filterOperand(rng: Rng, condition: string): unknown {
  switch (condition) {
    case 'empty':
    case 'notempty':
      return undefined;
    case 'contains':
    case 'notcontains':
      return pick(rng, TEXT_OPERANDS);
    case 'oneof':
      if (rng() < 0.3) return pick(rng, ['abc, X ,TRUE', ' 5 ,x', 'null,é', 'É,ß,k', ',']);
      return Array.from({ length: int(rng, 0, 4) }, () => pick(rng, SCALAR_OPERANDS));
    case 'between': {
      // Text bounds most of the time (numeric ones are left to the JS evaluator).
      const bound = () => (rng() < 0.2 ? pick(rng, [null, '', undefined]) : rng() < 0.6 ? pick(rng, TEXT_BOUNDS) : pick(rng, SCALAR_OPERANDS));
      let from = bound();
      const to = bound();
      if ((from === undefined || from === null || from === '') && (to === undefined || to === null || to === '')) from = 'a';
      return { from, to };
    }
    case 'dateis':
    case 'datebefore':
    case 'dateafter':
      return pick(rng, DATES);
    case 'datebetween':
      return { from: { value: pick(rng, DATES.slice(0, 3)) }, to: { value: pick(rng, DATES.slice(0, 3)) } };
    default:
      return pick(rng, SCALAR_OPERANDS);
  }
}

/** One filter; the common conditions are drawn more often. */
export function filterItem(rng: Rng): Record<string, unknown> {
  const r = rng();
  const condition =
    r < 0.5 ? pick(rng, ['contains', 'notcontains', 'oneof', '==', '!=', 'empty', 'notempty']) : r < 0.6 ? 'between' : pick(rng, FILTER_CONDITIONS);
  const item: Record<string, unknown> = { column: pick(rng, COLUMNS), condition };
  const value = filterOperand(rng, condition);
  if (value !== undefined) item.value = value;
  return item;
}

/** A select body whose `where` has `$filters` (1–3), alone or beside other keys. */
export function filtersQueryBody(rng: Rng, bounds: { maxId: number; times: string[] }): Record<string, unknown> {
  const body = queryBody(rng, bounds);
  const where = rng() < 0.6 ? {} : ((body.where as Record<string, unknown> | undefined) ?? {});
  body.where = { ...where, $filters: Array.from({ length: int(rng, 1, 3) }, () => filterItem(rng)) };
  return body;
}
