import type { EntryColumn, ValueTest } from './conditions.js';
import { sqliteFilter } from './sqlite-filters.js';
import { idText, placeholders, type SqlDialect } from './dialect.js';
import { sqliteSortKey } from './sqlite-keys.js';
import { joinSql, literal, raw, Sql, sql } from './fragment.js';
import { budgetSalt, sqliteBudgetCheck } from '../../db/statement-budget.js';
import { SQLITE_LIKE_FUNCTION } from '../../db/sqlite-functions.js';

/**
 * SQLite (JSON1 over the `data` text). `json_type` tells the JSON types apart ('integer'/'real' numbers,
 * 'true'/'false', 'text', 'null', 'array', 'object'; SQL NULL when the path is missing), `json_extract`
 * gives the SQL value (true/false as 1/0, hence the type tests first). Text compares with BINARY, i.e.
 * UTF-8 byte order, which is UTF-16 order for the strings where.ts lets through.
 */
const jsonPath = (segments: readonly string[]) => literal('$' + segments.map((s) => `."${s}"`).join(''));

/** A `like` pattern (only `%` as wildcard) as a GLOB pattern: `*` for `%`, GLOB's own wildcards made literal. */
const globPattern = (pattern: string) => pattern.replace(/[*?[%]/g, (c) => (c === '%' ? '*' : `[${c}]`));

/** The test on one value given as its type `t` (never NULL: '' when missing) and SQL value `v`. */
function valueTest(t: string, v: string, test: Exclude<ValueTest, { kind: 'null' } | { kind: 'exists' }>): Sql {
  if (test.kind === 'like') {
    // GLOB and instr compare code points exactly; upper() changes ASCII letters only (SQLite without ICU). GLOB ends
    // a string at its first NUL, so a document holding one (`\u0000` in its text) is tested by like.ts itself.
    const text = test.caseInsensitive ? `upper(${v})` : v;
    const match = test.wildcard
      ? sql`(CASE WHEN instr(e.data, '\\u0000') > 0 THEN ${raw(SQLITE_LIKE_FUNCTION)}(${raw(v)}, ${test.pattern}, ${test.caseInsensitive ? 1 : 0}) ELSE ${raw(text)} GLOB ${globPattern(test.pattern)} END)`
      : sql`instr(${raw(text)}, ${test.pattern}) > 0`;
    return sql`(${raw(t)} = 'text' AND ${match})`;
  }
  if (test.kind === 'cmp') {
    const type = typeof test.value === 'number' ? `${t} IN ('integer', 'real')` : `${t} = 'text'`;
    return sql`(${raw(type)} AND ${raw(v)} ${raw(test.op)} ${test.value})`;
  }
  const parts: Sql[] = [];
  if (test.strings.length > 0) parts.push(sql`(${raw(t)} = 'text' AND ${raw(v)} IN (${placeholders(test.strings)}))`);
  if (test.numbers.length > 0) parts.push(sql`(${raw(t)} IN ('integer', 'real') AND ${raw(v)} IN (${placeholders(test.numbers)}))`);
  for (const b of new Set(test.booleans)) parts.push(raw(`${t} = '${b}'`));
  return parts.length === 0 ? raw('FALSE') : sql`(${joinSql(parts, ' OR ')})`;
}

/** Fast case: no array on the path, so sift reaches exactly one value (the last key's, or missing). */
function single(segments: readonly string[], test: ValueTest): Sql {
  const path = jsonPath(segments);
  const t = `COALESCE(json_type(e.data, ${path.text}), '')`;
  if (test.kind === 'null') return raw(`(${t} IN ('', 'null'))`);
  if (test.kind === 'exists') return raw(`(${t} <> '')`);
  return valueTest(t, `json_extract(e.data, ${path.text})`, test);
}

/**
 * General case (an array somewhere on the path): the values sift reaches, as a recursive walk `w(t, v, d)`
 * (type, SQL value, number of keys read): arrays expand into their elements at the same depth, objects
 * read the next key. Rows with d = n are the values at the end of the path; rows with d < n that are
 * neither object nor array are where the walk stopped (sift's "missing").
 */
function walk(segments: readonly string[], test: ValueTest): Sql {
  const n = segments.length;
  const steps = segments.slice(1).map((segment, i) => {
    const path = jsonPath([segment]).text;
    return `UNION ALL SELECT COALESCE(json_type(w.v, ${path}), ''), json_extract(w.v, ${path}), ${i + 2} FROM w WHERE w.t = 'object' AND w.d = ${i + 1} `;
  });
  const first = jsonPath(segments.slice(0, 1)).text;
  let emitted: Sql;
  if (test.kind === 'null') emitted = raw(`w.t IN ('', 'null') OR (w.d < ${n} AND w.t NOT IN ('object', 'array'))`);
  else if (test.kind === 'exists') emitted = raw(`w.d = ${n} AND w.t <> ''`);
  else emitted = sql`w.d = ${raw(String(n))} AND ${valueTest('w.t', 'w.v', test)}`;
  return sql`EXISTS (WITH RECURSIVE w(t, v, d) AS (SELECT COALESCE(json_type(e.data, ${raw(first)}), ''), json_extract(e.data, ${raw(first)}), 1 UNION ALL SELECT a.type, a.value, w.d FROM w, json_each(w.v) a WHERE w.t = 'array' ${raw(steps.join(''))}) SELECT 1 FROM w WHERE ${emitted})`;
}

/**
 * A document without a `[` has no array anywhere, so the path reaches one value and fewer JSON calls decide:
 * `json_extract` alone tells strings (text not starting with `{`, the only other text being an object's
 * JSON) and numbers (other than 0 and 1, which are also how true and false come out) apart.
 */
function arrayFree(segments: readonly string[], test: ValueTest): Sql {
  const path = jsonPath(segments).text;
  const v = `json_extract(e.data, ${path})`;
  if (test.kind === 'null') return raw(`(COALESCE(json_type(e.data, ${path}), 'null') = 'null')`);
  if (test.kind === 'exists') return raw(`(json_type(e.data, ${path}) IS NOT NULL)`);
  if (test.kind === 'in' && test.booleans.length === 0) {
    const plainStrings = test.strings.every((s) => !s.startsWith('{'));
    const plainNumbers = test.numbers.every((n) => n !== 0 && n !== 1);
    if (plainStrings && plainNumbers) return sql`COALESCE(${raw(v)} IN (${placeholders([...test.strings, ...test.numbers])}), FALSE)`;
  }
  return single(segments, test);
}

export const sqliteDialect: SqlDialect = {
  name: 'sqlite',
  // Every scan of entries carries the time budget's check (db/statement-budget.ts; armed by Database.bounded).
  entries: (dataSourceId, index) =>
    sql`(SELECT id, data, sort_order, created_at, updated_at FROM data_source_entries${raw(index ? ` INDEXED BY ${index}` : '')} WHERE data_source_id = ${idText(dataSourceId)} AND ${new Sql(sqliteBudgetCheck('id'), [budgetSalt()])}) e`,
  entriesAfter: (dataSourceId, afterId) =>
    sql`(SELECT id, data, sort_order, created_at, updated_at FROM data_source_entries WHERE data_source_id = ${idText(dataSourceId)} AND id > ${afterId} AND ${new Sql(sqliteBudgetCheck('id'), [budgetSalt()])}) e`,
  sortKey: sqliteSortKey,
  path(segments, test) {
    const anyArray = segments.map((_, i) => `json_type(e.data, ${jsonPath(segments.slice(0, i + 1)).text}) = 'array'`).join(' OR ');
    return sql`(CASE WHEN instr(e.data, '[') = 0 THEN ${arrayFree(segments, test)} WHEN ${raw(anyArray)} THEN ${walk(segments, test)} ELSE ${single(segments, test)} END)`;
  },
  filter: sqliteFilter,
  column(column: EntryColumn, test) {
    if (test.kind === 'cmp') return sql`(e.${raw(column)} ${raw(test.op)} ${test.value})`;
    const values = [...test.numbers, ...test.strings];
    return values.length === 0 ? raw('FALSE') : sql`(e.${raw(column)} IN (${placeholders(values)}))`;
  },
  // The value's JSON text as the document holds it (`->` keeps it, numbers included): JS wrote it, one text per
  // value (JSON.stringify: `1`, never `1.0`; one escaping per string), so equal texts are equal values and
  // type-strict (`1`, `"1"`, `true`). Decoding strings instead would merge lone surrogates (json_extract gives
  // U+FFFD-like bytes for them).
  distinctKey(segments) {
    const path = jsonPath(segments).text;
    const dotted = segments.length > 1 ? ` OR json_type(e.data, ${jsonPath([segments.join('.')]).text}) IS NOT NULL` : '';
    return { key: `(e.data -> ${path})`, odd: `(json_type(e.data, ${path}) IN ('object', 'array')${dotted})` };
  },
  orderTerm: (alias, column, desc) => `${alias}.${column} ${desc ? 'DESC' : 'ASC'}`,
};
