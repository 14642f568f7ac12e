import { SQLITE_DATE_FUNCTION, SQLITE_LOWER_FUNCTION, SQLITE_NUMBER_FUNCTION } from '../../db/sqlite-functions.js';
import type { FilterTest } from './conditions.js';
import { placeholders } from './dialect.js';
import { joinSql, literal, raw, sql, type Sql } from './fragment.js';

/**
 * SQLite's `$filters` tests (sql/filters.ts). The value is read as compileDataPath reads it: `e.data -> '$."a"."b"'`
 * walks objects only (a key of an array or a scalar is missing), after the top-level key `"a.b"`; `->` gives the
 * value's JSON text as stored (JSON.stringify's: numbers as `String(n)`, objects as their JSON), NULL when missing.
 * Texts are compared with BINARY (UTF-8 bytes: UTF-16 order for the operands let through); `lower()` folds ASCII
 * only, so the two non-ASCII characters JS lowercases to ASCII are replaced first (filters.ts).
 */
const jsonPath = (segments: readonly string[]) => literal('$' + segments.map((s) => `."${s}"`).join('')).text;

/** U+212A (KELVIN SIGN) and U+0130 (İ), the non-ASCII characters JS lowercases to ASCII, and İ's lowercase. */
const KELVIN = '\u212a';
const DOTTED_I = '\u0130';
const DOTTED_I_LOWER = 'i\u0307';

/** JS's `toLowerCase()` for the operands filters.ts lets through; `caseful` operands: JS's own (SQLITE_LOWER_FUNCTION). */
const fold = (text: string, caseful = false) =>
  caseful ? `${SQLITE_LOWER_FUNCTION}(${text})` : `lower(replace(replace(${text}, '${KELVIN}', 'k'), '${DOTTED_I}', '${DOTTED_I_LOWER}'))`;

const booleanTest = (t: string, booleans: readonly boolean[]) => (booleans.length === 0 ? 'FALSE' : booleans.map((b) => `${t} = '${b}'`).join(' OR '));

/** A number read from a text element as numericValue reads it (NULL when it is not numeric). */
const numberOf = (text: string) => `${SQLITE_NUMBER_FUNCTION}(${text})`;

/**
 * `contains`, or a range: by `text` (the element's text), except that a bound with a number compares `num` (the
 * element's number, NULL when the element is not numeric; null: never numeric) with it when there is one.
 */
function textTest(text: string, num: string | null, test: Extract<FilterTest, { kind: 'contains' } | { kind: 'range' }>): Sql {
  if (test.kind === 'contains') return sql`instr(${raw(fold(text, test.caseful))}, ${test.needle}) > 0`;
  const parts: Sql[] = [];
  for (const [bound, op] of [
    [test.from, test.from?.strict ? '>' : '>='],
    [test.to, test.to?.strict ? '<' : '<='],
  ] as const) {
    if (!bound) continue;
    const byText = sql`${raw(text)} ${raw(op)} ${bound.text}`;
    // NULL (not numeric) falls through to the text.
    parts.push(bound.num !== undefined && num !== null ? sql`COALESCE(${raw(num)} ${raw(op)} ${bound.num}, ${byText})` : byText);
  }
  return sql`(${joinSql(parts, ' AND ')})`;
}

/**
 * The test of one element (or of the value when it is not an array): `t` its JSON type (NULL when missing), `s` its
 * SQL value (the string for a text, the number for a number), `j` its JSON text.
 */
function elementTest(t: string, s: string, j: string, test: Exclude<FilterTest, { kind: 'empty' } | { kind: 'date' }>): Sql {
  const booleans = booleanTest(t, test.booleans);
  if (test.kind === 'equals') {
    const folded = test.texts.length === 0 ? [] : [sql`${raw(fold(s))} IN (${placeholders(test.texts)})`];
    const caseful = test.caseful.length === 0 ? [] : [sql`${raw(fold(s, true))} IN (${placeholders(test.caseful)})`];
    const texts = folded.length + caseful.length === 0 ? raw('FALSE') : sql`(${joinSql([...folded, ...caseful], ' OR ')})`;
    if (test.numbers.length === 0)
      return sql`(CASE WHEN ${raw(t)} IS NULL OR ${raw(t)} = 'null' THEN ${raw(test.nulls ? 'TRUE' : 'FALSE')} WHEN ${raw(t)} = 'text' THEN ${texts} ELSE ${raw(booleans)} END)`;
    const numbers = placeholders(test.numbers);
    return sql`(CASE WHEN ${raw(t)} IS NULL OR ${raw(t)} = 'null' THEN ${raw(test.nulls ? 'TRUE' : 'FALSE')} WHEN ${raw(t)} = 'text' THEN (${texts} OR COALESCE(${raw(numberOf(s))} IN (${numbers}), FALSE)) WHEN ${raw(t)} IN ('integer', 'real') THEN ${raw(s)} IN (${numbers}) ELSE ${raw(booleans)} END)`;
  }
  if (test.kind === 'contains') {
    // Numbers, objects and arrays by their JSON text (a number's is `String(n)`).
    return sql`(CASE WHEN ${raw(t)} = 'text' THEN ${textTest(s, null, test)} WHEN ${raw(t)} IN ('integer', 'real', 'object', 'array') THEN ${textTest(j, null, test)} ELSE ${raw(booleans)} END)`;
  }
  return sql`(CASE WHEN ${raw(t)} = 'text' THEN ${textTest(s, numberOf(s), test)} WHEN ${raw(t)} IN ('integer', 'real') THEN ${textTest(j, s, test)} WHEN ${raw(t)} IN ('object', 'array') THEN ${textTest(j, null, test)} ELSE ${raw(booleans)} END)`;
}

export function sqliteFilter(segments: readonly string[], test: FilterTest): Sql {
  const read = `e.data -> ${jsonPath(segments)}`;
  const value = segments.length > 1 ? `COALESCE(e.data -> ${jsonPath([segments.join('.')])}, ${read})` : read;
  const t = 'json_type(f.j)';
  let body: Sql;
  if (test.kind === 'empty') {
    body = raw(`${t} IS NULL OR ${t} = 'null' OR (${t} = 'text' AND f.j ->> '$' = '') OR (${t} = 'array' AND json_array_length(f.j) = 0)`);
  } else if (test.kind === 'date') {
    // The value itself: only numbers and strings can be dates.
    const checks = JSON.stringify(test.checks.map(({ unit, target, op }) => ({ unit, target, op })));
    body = sql`CASE WHEN ${raw(t)} IN ('integer', 'real', 'text') THEN ${raw(SQLITE_DATE_FUNCTION)}(f.j ->> '$', ${raw(test.time ? '1' : '0')}, ${checks}) END`;
  } else {
    const elements = elementTest('a.type', 'a.atom', 'f.j -> a.fullkey', test);
    body = sql`CASE WHEN ${raw(t)} = 'array' THEN EXISTS (SELECT 1 FROM json_each(f.j) a WHERE ${elements}) ELSE ${elementTest(t, "f.j ->> '$'", 'f.j', test)} END`;
  }
  return sql`COALESCE((SELECT ${body} FROM (SELECT ${raw(value)} AS j) f), FALSE)`;
}
