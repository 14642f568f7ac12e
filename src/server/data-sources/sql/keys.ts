import type { ValueTest } from './conditions.js';
import { placeholders } from './dialect.js';
import { joinSql, raw, sql, type Sql } from './fragment.js';

/**
 * The sort key of a data path (issue 14, items 2 and 3): three SQL expressions over an entry's `data` column
 * with query/order.ts's order, used both to ORDER BY a data column and as the columns of its expression index.
 *
 * - `rank`: 0 a number, 1 text (a string, or a boolean as its text 'true'/'false'), 2 null or missing,
 *   3 "ambiguous": a value whose JS order SQL does not reproduce (a string that may be numeric, which order.ts
 *   sorts as a number; a string with characters from U+E000 up, where UTF-8 and UTF-16 orders differ; an
 *   object or array, sorted by their JSON text) and, for `where`, a value sift may reach otherwise than by
 *   the plain path (an array at the end of or on the path, a literal dotted key).
 * - `num`: the number when rank 0; `txt`: the text when rank 1 (byte order, i.e. UTF-16 order for the rest).
 *
 * Ordering by (rank, num, txt) is order.ts's order for every row of rank 0-2 (ASC: numbers, text, then null
 * and missing; DESC the exact reverse); a query whose rows include a rank 3 is answered by the JS evaluator
 * (select.ts checks it in the same statement). For `where`, `keyTest` lets the database seek the index.
 */
export interface SortKey {
  rank: string;
  num: string;
  txt: string;
}

/** `num` is NULL for text (rank 1): saying so lets the index (rank, num, txt, …) seek on `txt`. */
const textLead = (key: SortKey) => `${key.rank} = 1 AND ${key.num} IS NULL AND ${key.txt}`;

/**
 * A condition on the key that every row matching `test` on the path satisfies unless its rank is 3, or null
 * (no useful one). select.ts ANDs it to the exact condition and checks in the same statement that no row of
 * rank 3 matches the exact condition (else it runs without it): a plain seek, never an OR with rank 3.
 */
export function keyTest(key: SortKey, test: ValueTest): Sql | null {
  switch (test.kind) {
    case 'exists':
    case 'like':
      return null;
    case 'null':
      return raw(`(${key.rank} = 2)`);
    case 'cmp': {
      const lead = typeof test.value === 'number' ? `${key.rank} = 0 AND ${key.num}` : textLead(key);
      return sql`(${raw(`${lead} ${test.op}`)} ${test.value})`;
    }
    case 'in': {
      const parts: Sql[] = [];
      if (test.numbers.length > 0) parts.push(sql`(${raw(`${key.rank} = 0 AND ${key.num}`)} IN (${placeholders(test.numbers)}))`);
      const texts = [...test.strings, ...new Set(test.booleans.map(String))];
      if (texts.length > 0) parts.push(sql`(${raw(textLead(key))} IN (${placeholders(texts)}))`);
      return parts.length === 0 ? null : parts.length === 1 ? parts[0]! : sql`(${joinSql(parts, ' OR ')})`;
    }
  }
}

const JS_CMP = {
  '>': (a: string, b: string) => a > b,
  '>=': (a: string, b: string) => a >= b,
  '<': (a: string, b: string) => a < b,
  '<=': (a: string, b: string) => a <= b,
};

/**
 * Whether `keyTest(key, test)` is exactly `test` for every value of rank below 3, so that a count needs no
 * other check than the index (select.ts). Rank 0-2 values are what sift reaches by the plain path alone: one
 * number, string or boolean, or null/missing (arrays, objects, literal dotted keys are rank 3). Numbers and
 * null are told apart by rank; but rank 1 holds strings and booleans under one text, 'true'/'false': a test
 * whose strings or range include that text, or that names a boolean, also needs the exact condition.
 */
export function keyTestIsExact(test: ValueTest): boolean {
  switch (test.kind) {
    case 'exists':
    case 'like':
      return false;
    case 'null':
      return true;
    case 'cmp':
      return typeof test.value === 'number' || !['true', 'false'].some((text) => JS_CMP[test.op](text, test.value as string));
    case 'in':
      return test.booleans.length === 0 && test.strings.length + test.numbers.length > 0 && !test.strings.some((s) => s === 'true' || s === 'false');
  }
}
