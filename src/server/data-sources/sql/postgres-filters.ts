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

function textTest(text: string, test: Extract<FilterTest, { kind: 'contains' } | { kind: 'range' }>): Sql {
  if (test.kind === 'contains') return sql`strpos(${raw(fold(text))}, ${textParam(test.needle)}) > 0`;
  const c = `(${text} COLLATE "C")`;
  const parts: Sql[] = [];
  if (test.from) parts.push(sql`${raw(c)} ${raw(test.from.strict ? '>' : '>=')} ${textParam(test.from.text)}`);
  if (test.to) parts.push(sql`${raw(c)} ${raw(test.to.strict ? '<' : '<=')} ${textParam(test.to.text)}`);
  return sql`(${joinSql(parts, ' AND ')})`;
}

/** The test of one json value `x` (an element, or the value when it is not an array; NULL when missing). */
function elementTest(x: string, test: Exclude<FilterTest, { kind: 'empty' }>): Sql {
  const t = `json_typeof(${x})`;
  const s = `(${x} #>> '{}')`;
  const booleans = test.booleans.length === 0 ? 'FALSE' : test.booleans.map((b) => `${x}::text = '${b}'`).join(' OR ');
  if (test.kind === 'equals') {
    const texts = test.texts.length === 0 ? raw('FALSE') : sql`${raw(fold(s))} IN (${joinSql(test.texts.map(textParam), ', ')})`;
    return sql`(CASE WHEN ${raw(x)} IS NULL OR ${raw(t)} = 'null' THEN ${raw(test.nulls ? 'TRUE' : 'FALSE')} WHEN ${raw(t)} = 'string' THEN ${texts} WHEN ${raw(t)} = 'boolean' THEN ${raw(booleans)} ELSE FALSE END)`;
  }
  // Numbers: a `contains` needle is in no number's text; their JSON text is compared by `range`.
  const others = test.kind === 'range' ? `'number', 'object', 'array'` : `'object', 'array'`;
  return sql`(CASE WHEN ${raw(t)} = 'string' THEN ${textTest(s, test)} WHEN ${raw(t)} IN (${raw(others)}) THEN ${textTest(`${x}::text`, test)} WHEN ${raw(t)} = 'boolean' THEN ${raw(booleans)} ELSE FALSE END)`;
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
  } else {
    body = sql`CASE WHEN ${raw(t)} = 'array' THEN EXISTS (SELECT 1 FROM json_array_elements(CASE WHEN ${raw(t)} = 'array' THEN f.j END) AS a(x) WHERE ${elementTest('a.x', test)}) ELSE ${elementTest('f.j', test)} END`;
  }
  return sql`COALESCE((SELECT ${body} FROM (SELECT ${raw(value)} AS j) f), FALSE)`;
}
