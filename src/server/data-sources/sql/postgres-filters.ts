import { casefulMap } from './case-fold.js';
import type { FilterTest } from './conditions.js';
import { joinSql, literal, raw, sql, type Sql } from './fragment.js';

/**
 * PostgreSQL's `$filters` tests (sql/filters.ts), on the `json` (not jsonb) of the `data` text: `json` keeps each
 * value's text as stored (JSON.stringify's: numbers as `String(n)`, objects as their JSON, key order kept), which
 * filters.ts's textOf compares. The value is read as compileDataPath reads it: `-> 'a' -> 'b'` walks objects only
 * (a key of an array or a scalar is NULL), after the top-level key `a.b`. Texts are compared under COLLATE "C"
 * (UTF-8 bytes), where `lower()` folds ASCII only; the two non-ASCII characters JS lowercases to ASCII are
 * replaced first (filters.ts).
 */
/** U+212A (KELVIN SIGN) and U+0130 (İ), the non-ASCII characters JS lowercases to ASCII, and İ's lowercase. */
const KELVIN = '\u212a';
const DOTTED_I = '\u0130';
const DOTTED_I_LOWER = 'i\u0307';

/** JS's `toLowerCase()` for the operands filters.ts lets through (under COLLATE "C", `lower()` folds ASCII only). */
const fold = (text: string) => `lower(replace(replace(${text}, '${KELVIN}', 'k'), '${DOTTED_I}', '${DOTTED_I_LOWER}') COLLATE "C")`;

const textParam = (value: string) => sql`CAST(${value} AS text)`;

/**
 * JS's `toLowerCase()` of `text` for its characters that can meet one of the caseful `operands` (case-fold.ts):
 * İ replaced by `i` + U+0307, then `translate()` of every other character JS lowercases to one of theirs.
 */
function foldCaseful(text: string, operands: readonly string[]): Sql {
  const { from, to } = casefulMap(operands);
  return sql`translate(${raw(`replace(${text}, '${DOTTED_I}', '${DOTTED_I_LOWER}')`)}, ${textParam(from)}, ${textParam(to)})`;
}

/**
 * numericValue's syntax (query/values.ts `isDecimal`): spaces (space, tab, LF, CR), a sign, digits with a point, an
 * exponent, spaces. `float8` reads it as `Number()` does (correctly rounded); past the double range it refuses it
 * (22003), and the statement falls back to the JS evaluator.
 */
const DECIMAL = '^[ \t\n\r]*[+-]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][+-]?[0-9]+)?[ \t\n\r]*$';

/** A string element's number as numericValue reads it, NULL when it is not numeric. */
const numberOf = (text: string) => sql`(CASE WHEN ${raw(text)} ~ ${textParam(DECIMAL)} THEN CAST(${raw(text)} AS float8) END)`;

/**
 * `contains`, or a range: by `text` (the element's text), except that a bound with a number compares `num` (the
 * element's number, NULL when the element is not numeric; null: never numeric) with it when there is one.
 */
function textTest(text: string, num: Sql | null, test: Extract<FilterTest, { kind: 'contains' } | { kind: 'range' }>): Sql {
  if (test.kind === 'contains') {
    const folded = test.caseful ? foldCaseful(text, [test.needle]) : raw(fold(text));
    return sql`strpos(${folded}, ${textParam(test.needle)}) > 0`;
  }
  const c = `(${text} COLLATE "C")`;
  const parts: Sql[] = [];
  for (const [bound, op] of [
    [test.from, test.from?.strict ? '>' : '>='],
    [test.to, test.to?.strict ? '<' : '<='],
  ] as const) {
    if (!bound) continue;
    const byText = sql`${raw(c)} ${raw(op)} ${textParam(bound.text)}`;
    // NULL (not numeric) falls through to the text.
    parts.push(bound.num !== undefined && num !== null ? sql`COALESCE(${num} ${raw(op)} ${numberParam(bound.num)}, ${byText})` : byText);
  }
  return sql`(${joinSql(parts, ' AND ')})`;
}

const numberParam = (value: number) => sql`CAST(${value} AS float8)`;

/** The test of one json value `x` (an element, or the value when it is not an array; NULL when missing). */
function elementTest(x: string, test: Exclude<FilterTest, { kind: 'empty' } | { kind: 'date' }>): Sql {
  const t = `json_typeof(${x})`;
  const s = `(${x} #>> '{}')`;
  // A JSON number's text is JSON.stringify's, always within the double range.
  const jsonNumber = sql`CAST(${raw(`${x}::text`)} AS float8)`;
  const booleans = test.booleans.length === 0 ? 'FALSE' : test.booleans.map((b) => `${x}::text = '${b}'`).join(' OR ');
  if (test.kind === 'equals') {
    const folded = test.texts.length === 0 ? [] : [sql`${raw(fold(s))} IN (${joinSql(test.texts.map(textParam), ', ')})`];
    const caseful = test.caseful.length === 0 ? [] : [sql`${foldCaseful(s, test.caseful)} IN (${joinSql(test.caseful.map(textParam), ', ')})`];
    const texts = folded.length + caseful.length === 0 ? raw('FALSE') : sql`(${joinSql([...folded, ...caseful], ' OR ')})`;
    if (test.numbers.length === 0)
      return sql`(CASE WHEN ${raw(x)} IS NULL OR ${raw(t)} = 'null' THEN ${raw(test.nulls ? 'TRUE' : 'FALSE')} WHEN ${raw(t)} = 'string' THEN ${texts} WHEN ${raw(t)} = 'boolean' THEN ${raw(booleans)} ELSE FALSE END)`;
    const numbers = joinSql(test.numbers.map(numberParam), ', ');
    return sql`(CASE WHEN ${raw(x)} IS NULL OR ${raw(t)} = 'null' THEN ${raw(test.nulls ? 'TRUE' : 'FALSE')} WHEN ${raw(t)} = 'string' THEN (${texts} OR COALESCE(${numberOf(s)} IN (${numbers}), FALSE)) WHEN ${raw(t)} = 'number' THEN ${jsonNumber} IN (${numbers}) WHEN ${raw(t)} = 'boolean' THEN ${raw(booleans)} ELSE FALSE END)`;
  }
  if (test.kind === 'contains') {
    // Numbers, objects and arrays by their JSON text (a number's is `String(n)`).
    return sql`(CASE WHEN ${raw(t)} = 'string' THEN ${textTest(s, null, test)} WHEN ${raw(t)} IN ('number', 'object', 'array') THEN ${textTest(`${x}::text`, null, test)} WHEN ${raw(t)} = 'boolean' THEN ${raw(booleans)} ELSE FALSE END)`;
  }
  return sql`(CASE WHEN ${raw(t)} = 'string' THEN ${textTest(s, numberOf(s), test)} WHEN ${raw(t)} = 'number' THEN ${textTest(`${x}::text`, jsonNumber, test)} WHEN ${raw(t)} IN ('object', 'array') THEN ${textTest(`${x}::text`, null, test)} WHEN ${raw(t)} = 'boolean' THEN ${raw(booleans)} ELSE FALSE END)`;
}

export function postgresFilter(segments: readonly string[], test: FilterTest): Sql {
  const read = `e.data::json${segments.map((s) => ` -> ${literal(s).text}`).join('')}`;
  const value = segments.length > 1 ? `COALESCE(e.data::json -> ${literal(segments.join('.')).text}, ${read})` : read;
  const t = 'json_typeof(f.j)';
  let body: Sql;
  if (test.kind === 'empty') {
    body = raw(
      `f.j IS NULL OR ${t} = 'null' OR (${t} = 'string' AND (f.j #>> '{}') = '') OR COALESCE(CASE WHEN ${t} = 'array' THEN json_array_length(f.j) = 0 END, FALSE)`,
    );
  } else if (test.kind === 'date') {
    // The value itself: only numbers and strings can be dates (iar_date_sign: migration 0015).
    const checks = test.checks.map(
      (check) => sql`iar_date_sign(f.j, ${raw(test.time ? 'TRUE' : 'FALSE')}, ${textParam(check.unit)}, CAST(${check.target} AS bigint)) ${raw(check.op)} 0`,
    );
    body = sql`CASE WHEN ${raw(t)} IN ('number', 'string') THEN ${joinSql(checks, ' AND ')} END`;
  } else {
    body = sql`CASE WHEN ${raw(t)} = 'array' THEN EXISTS (SELECT 1 FROM json_array_elements(CASE WHEN ${raw(t)} = 'array' THEN f.j END) AS a(x) WHERE ${elementTest('a.x', test)}) ELSE ${elementTest('f.j', test)} END`;
  }
  return sql`COALESCE((SELECT ${body} FROM (SELECT ${raw(value)} AS j OFFSET 0) f), FALSE)`;
}
