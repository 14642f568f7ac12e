import type { EntryColumn, ValueTest } from './conditions.js';
import { postgresFilter } from './postgres-filters.js';
import { idText, type SqlDialect } from './dialect.js';
import { postgresSortKey } from './postgres-keys.js';
import { joinSql, literal, raw, sql, type Sql } from './fragment.js';

/**
 * PostgreSQL (jsonb of the `data` text, parsed once per row in a fenced subquery). jsonb equality is
 * type-strict and compares numbers as numerics (exact decimals: for the shortest decimal forms JS writes,
 * their order is the order of the doubles); text is compared under COLLATE "C" (UTF-8 byte order), not the
 * database's collation.
 */
const at = (doc: string, segments: readonly string[]) => `(${doc}${segments.map((s) => ` -> ${literal(s).text}`).join('')})`;

/** jsonb values as parameters, as jsonb. */
const jsonbText = (value: string) => sql`to_jsonb(CAST(${value} AS text))`;
const jsonbNumber = (value: number) => sql`to_jsonb(CAST(${value} AS numeric))`;

/** The test on one jsonb value `x` (SQL NULL when missing); never NULL. */
function valueTest(x: string, test: Exclude<ValueTest, { kind: 'null' } | { kind: 'exists' }>): Sql {
  if (test.kind === 'like') {
    // Under COLLATE "C", upper() changes ASCII letters only and LIKE compares characters as they are; ESCAPE ''
    // leaves every character but `%` literal (where.ts lets no `_` into a wildcard pattern).
    const s = `((${x} #>> '{}') COLLATE "C")`;
    const text = test.caseInsensitive ? `upper(${s})` : s;
    const match = test.wildcard ? sql`${raw(text)} LIKE CAST(${test.pattern} AS text) ESCAPE ''` : sql`strpos(${raw(text)}, CAST(${test.pattern} AS text)) > 0`;
    return sql`COALESCE(CASE WHEN jsonb_typeof(${raw(x)}) = 'string' THEN ${match} END, FALSE)`;
  }
  if (test.kind === 'cmp') {
    if (typeof test.value === 'number') {
      return sql`COALESCE(jsonb_typeof(${raw(x)}) = 'number' AND ${raw(x)} ${raw(test.op)} ${jsonbNumber(test.value)}, FALSE)`;
    }
    return sql`COALESCE(CASE WHEN jsonb_typeof(${raw(x)}) = 'string' THEN (${raw(x)} #>> '{}') COLLATE "C" ${raw(test.op)} CAST(${test.value} AS text) END, FALSE)`;
  }
  const values: Sql[] = [...test.strings.map(jsonbText), ...test.numbers.map(jsonbNumber), ...[...new Set(test.booleans)].map((b) => raw(`'${b}'::jsonb`))];
  return values.length === 0 ? raw('FALSE') : sql`COALESCE(${raw(x)} IN (${joinSql(values, ', ')}), FALSE)`;
}

function single(segments: readonly string[], test: ValueTest): Sql {
  const x = at('e.doc', segments);
  if (test.kind === 'null') return raw(`(COALESCE(jsonb_typeof(${x}), 'null') = 'null')`);
  if (test.kind === 'exists') return raw(`(${x} IS NOT NULL)`);
  return valueTest(x, test);
}

/** The recursive walk of sqlite.ts's `walk`, as `w(x, d)` with x the jsonb value (NULL when missing). */
function walk(segments: readonly string[], test: ValueTest): Sql {
  const n = segments.length;
  const keys = segments
    .slice(1)
    .map((s, i) => `WHEN ${i + 1} THEN ${literal(s).text}`)
    .join(' ');
  const step = n > 1 ? ` UNION ALL SELECT w.x -> (CASE w.d ${keys} END), w.d + 1 WHERE jsonb_typeof(w.x) = 'object' AND w.d < ${n}` : '';
  const t = `COALESCE(jsonb_typeof(w.x), '')`;
  let emitted: Sql;
  if (test.kind === 'null') emitted = raw(`${t} IN ('', 'null') OR (w.d < ${n} AND ${t} NOT IN ('object', 'array'))`);
  else if (test.kind === 'exists') emitted = raw(`w.d = ${n} AND w.x IS NOT NULL`);
  else emitted = sql`w.d = ${raw(String(n))} AND ${valueTest('w.x', test)}`;
  return sql`EXISTS (WITH RECURSIVE w(x, d) AS (SELECT ${raw(at('e.doc', segments.slice(0, 1)))}, 1 UNION ALL SELECT s.x, s.d FROM w CROSS JOIN LATERAL (SELECT a.x, w.d AS d FROM jsonb_array_elements(CASE WHEN jsonb_typeof(w.x) = 'array' THEN w.x END) AS a(x)${raw(step)}) s) SELECT 1 FROM w WHERE ${emitted})`;
}

/**
 * The entries matching `where` (over the table as `b`) as `e`, `data` parsed by a lateral subquery (fenced by
 * OFFSET 0): once per row read, and only for the rows the read reaches. It costs about a tenth more per row
 * than the fenced form, so only reads that may stop early use it.
 */
const lateral = (where: Sql) =>
  sql`(SELECT b.id, b.data, b.sort_order, b.created_at, b.updated_at, j.doc FROM data_source_entries b CROSS JOIN LATERAL (SELECT b.data::jsonb AS doc OFFSET 0) j WHERE ${where}) e`;

export const postgresDialect: SqlDialect = {
  name: 'postgres',
  // OFFSET 0 keeps the subquery from being flattened, so `data` is parsed once per row, not once per use;
  // a query through an index is flattened instead (the index is on the base table), and reads few rows.
  // A fenced subquery is planned alone: it cannot know that an outer ORDER BY … LIMIT could stop early, so
  // a page reads the table through the lateral form (below), which keeps the order index usable.
  entries: (dataSourceId, index, paged) =>
    index
      ? sql`(SELECT id, data, sort_order, created_at, updated_at, data::jsonb AS doc FROM data_source_entries WHERE data_source_id = ${idText(dataSourceId)}) e`
      : paged
        ? lateral(sql`b.data_source_id = ${idText(dataSourceId)}`)
        : sql`(SELECT id, data, sort_order, created_at, updated_at, data::jsonb AS doc FROM data_source_entries WHERE data_source_id = ${idText(dataSourceId)} OFFSET 0) e`,
  entriesAfter: (dataSourceId, afterId) => lateral(sql`b.data_source_id = ${idText(dataSourceId)} AND b.id > ${afterId}`),
  sortKey: postgresSortKey,
  path(segments, test) {
    const anyArray = segments.map((_, i) => `jsonb_typeof(${at('e.doc', segments.slice(0, i + 1))}) = 'array'`).join(' OR ');
    return sql`(CASE WHEN ${raw(anyArray)} THEN ${walk(segments, test)} ELSE ${single(segments, test)} END)`;
  },
  filter: postgresFilter,
  column(column: EntryColumn, test) {
    const text = column === 'created_at' || column === 'updated_at';
    const cast = (value: string | number) => (text ? sql`CAST(${value} AS text)` : sql`CAST(${value} AS double precision)`);
    const target = text ? `e.${column} COLLATE "C"` : `e.${column}`;
    if (test.kind === 'cmp') return sql`(${raw(target)} ${raw(test.op)} ${cast(test.value)})`;
    const values = [...test.numbers, ...test.strings];
    return values.length === 0 ? raw('FALSE') : sql`(e.${raw(column)} IN (${joinSql(values.map(cast), ', ')}))`;
  },
  // jsonb equality: type-strict, numbers as numerics (the decimal texts JS writes are one per double), strings
  // by their characters.
  distinctKey(segments) {
    const dotted = segments.length > 1 ? ` OR ${at('e.doc', [segments.join('.')])} IS NOT NULL` : '';
    return { key: at('e.doc', segments), odd: `(jsonb_typeof(${at('e.doc', segments)}) IN ('object', 'array')${dotted})` };
  },
  orderTerm: (alias, column, desc) => `${alias}.${column}${column === 'created_at' || column === 'updated_at' ? ' COLLATE "C"' : ''} ${desc ? 'DESC' : 'ASC'}`,
};
