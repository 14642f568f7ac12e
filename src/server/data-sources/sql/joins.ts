import type { CompiledJoin } from '../query/joins.js';
import type { JoinRef } from '../query/types.js';
import { columnsOf, sizeOf, type Cond } from './conditions.js';
import { renderCond, type SqlDialect } from './dialect.js';
import { joinSql, literal, raw, sql, type Sql } from './fragment.js';
import { pathSegments } from './paths.js';
import { translateWhere } from './where.js';

/**
 * Joins with `on` whose value is `has` or `count` (query/joins.ts), with or without `required`, run by the
 * database: each becomes a materialized table `j<i>(k, n)` of the joined entries matching the join's `where`,
 * counted per key, LEFT JOINed to the parent entries on the parent's key. `required` is then a condition of the
 * page and of the count (one statement, one snapshot), `has` is `j<i>.k IS NOT NULL`, `count` is `j<i>.n`.
 *
 * Keys. query/joins.ts's keyOf makes numbers and numeric strings one key (their numeric reading), other text
 * another, booleans a third; null, missing, objects give none; an array (single pair) gives its elements' keys.
 * SQL builds the same key as text: a number `n` + its JSON text (JS wrote it, so it is String(value): one text
 * per double; on PostgreSQL the jsonb numeric's text, one per value), a boolean `b` + `true`/`false`, a string
 * that cannot be numeric (empty, or holding a character no decimal number has) `s` + the string, and a string
 * that is a plain integer of up to 15 digits (`0`, `-12`, no sign `+`, no leading zeros or spaces: its
 * numeric reading is exact and written the same) `n` + the string. Everything else is "ambiguous" (`x`):
 * other strings that may be numeric (`' 4'`, `'3.0'`, `'1e3'`), arrays and objects (SQL would need the
 * elements rule), and on SQLite a string of a document holding `\u0000` or an escaped surrogate (JSON1 and
 * GLOB do not read those as JS does). A matching entry (parent or joined) with an ambiguous key flags the
 * statement, and the JS evaluator answers (select.ts).
 *
 * Several `on` pairs (at most MAX_PAIRS) make a composite key, as keysOf does: a column that gives no key, or an
 * array or object (which give no key there, not their elements'), gives none for the entry. SQL writes each
 * part's key quoted (`"` and `\` escaped) and joins them with commas: NULL when a part is NULL, one text per
 * tuple (keysOf separates the parts with NUL, which no key SQL answers with holds), and each part evaluated
 * once. A composite with an ambiguous part (`"x"`) flags the statement like an ambiguous key.
 *
 * Taken only with `on` pairs of `id` or a one-segment data column (paths.ts) on each side; not the entries mode,
 * joins without `on`, or a joined `where` that does not translate.
 */
export interface SqlJoinPlan {
  name: string;
  ref: JoinRef;
  /** Set by the caller once the joined data source is resolved and the caller may read it (sql-query.ts). */
  dataSourceId: number | null;
  /** The `on` pairs' columns, in the same order (one pair or a composite key). */
  parent: KeyColumn[];
  joined: KeyColumn[];
  where: Cond;
  mode: 'has' | 'count' | 'sum';
  /** With `sum`: the summed column. */
  sum: KeyColumn | null;
  required: boolean;
}

/** `id`, or a data column of one segment. */
export type KeyColumn = { kind: 'id' } | { kind: 'data'; name: string };

/** At most this many joins per translated select (each is one more table in the statement). */
export const MAX_JOINS = 8;

/** At most this many `on` pairs per translated join (each is one more key expression per entry on each side). */
export const MAX_PAIRS = 4;

function keyColumn(column: string): KeyColumn | null {
  if (column === 'id') return { kind: 'id' };
  const name = column.startsWith('data.') ? column.slice(5) : column;
  // Other entry fields (`order`, `createdAt`, …) stay on the JS evaluator.
  if (['dataSourceId', 'order', 'createdAt', 'updatedAt', 'deletedAt'].includes(column)) return null;
  const segments = pathSegments(name);
  return segments && segments.length === 1 ? { kind: 'data', name } : null;
}

/** The plan of one compiled join, or null when it does not translate. */
export function planJoin(join: CompiledJoin, spec: unknown): SqlJoinPlan | null {
  if (join.mode === 'entries') return null;
  const sumColumn = (spec as { sum?: unknown }).sum;
  const sum = join.mode === 'sum' && typeof sumColumn === 'string' ? keyColumn(sumColumn) : null;
  if (join.mode === 'sum' && !sum) return null;
  const on = (spec as { on?: Record<string, unknown> }).on;
  if (!on || !join.on || join.on.length > MAX_PAIRS || Object.keys(on).length !== join.on.length) return null;
  const parent: KeyColumn[] = [];
  const joined: KeyColumn[] = [];
  for (const [parentColumn, joinedColumn] of Object.entries(on)) {
    const p = keyColumn(parentColumn);
    const j = typeof joinedColumn === 'string' ? keyColumn(joinedColumn) : null;
    if (!p || !j) return null;
    parent.push(p);
    joined.push(j);
  }
  const where = translateWhere(join.whereSource);
  if (!where) return null;
  return { name: join.name, ref: join.ref, dataSourceId: join.ref.dataSourceId ?? null, parent, joined, where, mode: join.mode, sum, required: join.required };
}

/** Size of the joins' conditions (to keep the statement under where.ts's MAX_SIZE). */
export const joinsSize = (joins: readonly SqlJoinPlan[]) => joins.reduce((n, join) => n + sizeOf(join.where) + 2, 0);

/** The joined data source's columns a join reads (its access rule may hide some: then it stays on JS). */
export function joinedColumns(join: SqlJoinPlan): Set<string> {
  const columns = columnsOf(join.where);
  for (const column of join.joined) if (column.kind === 'data') columns.add(column.name);
  if (join.sum?.kind === 'data') columns.add(join.sum.name);
  return columns;
}

/** A string no decimal number (values.ts isDecimal) can be: a character other than digits, spaces, `+-.eE`. */
const NOT_NUMERIC_SQLITE = '*[^0-9 \t\n\r+.eE-]*';
const NOT_NUMERIC_POSTGRES = '[^0-9 \t\n\r+.eE-]';

/** The key of a string `s` (SQL text expression), see the header. */
function textKey(dialect: SqlDialect, s: string): Sql {
  if (dialect.name === 'postgres') {
    return sql`CASE WHEN ${raw(s)} ~ '^(0|-?[1-9][0-9]{0,14})$' THEN 'n' || ${raw(s)} WHEN ${raw(s)} = '' OR ${raw(s)} ~ ${NOT_NUMERIC_POSTGRES} THEN 's' || ${raw(s)} ELSE 'x' END`;
  }
  // The document's escapes: `\u0000` ends a string for GLOB; a lone surrogate JSON1 may read as U+FFFD.
  const integer = `(${s} = '0' OR (${s} GLOB '[1-9]*' AND length(${s}) <= 15 AND NOT (${s} GLOB '*[^0-9]*')) OR (${s} GLOB '-[1-9]*' AND length(${s}) <= 16 AND NOT (substr(${s}, 2) GLOB '*[^0-9]*')))`;
  return sql`CASE WHEN instr(e.data, '\\u0000') > 0 OR instr(e.data, '\\ud') > 0 OR instr(e.data, '\\uD') > 0 THEN 'x' WHEN ${raw(integer)} THEN 'n' || ${raw(s)} WHEN ${raw(s)} = '' OR ${raw(s)} GLOB ${NOT_NUMERIC_SQLITE} THEN 's' || ${raw(s)} ELSE 'x' END`;
}

/**
 * The key of `e`'s column as text (NULL: no key; 'x': ambiguous), see the header. `part`: a part of a composite
 * key, where an array or an object gives no key.
 */
function columnKey(dialect: SqlDialect, column: KeyColumn, part: boolean): Sql {
  if (column.kind === 'id') return sql`('n' || CAST(e.id AS text))`;
  const nested = part ? 'NULL' : `'x'`;
  if (dialect.name === 'postgres') {
    const x = `(e.doc -> ${literal(column.name).text})`;
    return sql`(CASE jsonb_typeof(${raw(x)}) WHEN 'number' THEN 'n' || (${raw(x)} #>> '{}') WHEN 'boolean' THEN 'b' || (${raw(x)} #>> '{}') WHEN 'string' THEN ${textKey(dialect, `(${x} #>> '{}')`)} WHEN 'array' THEN ${raw(nested)} WHEN 'object' THEN ${raw(nested)} END)`;
  }
  const path = literal(`$."${column.name}"`).text;
  return sql`(CASE json_type(e.data, ${raw(path)}) WHEN 'integer' THEN 'n' || (e.data -> ${raw(path)}) WHEN 'real' THEN 'n' || (e.data -> ${raw(path)}) WHEN 'true' THEN 'btrue' WHEN 'false' THEN 'bfalse' WHEN 'text' THEN ${textKey(dialect, `json_extract(e.data, ${path})`)} WHEN 'array' THEN ${raw(nested)} WHEN 'object' THEN ${raw(nested)} END)`;
}

/** A key as a quoted text (`\` and `"` escaped): NULL when it is NULL, and one text per key. */
const quoted = (key: Sql) => sql`'"' || replace(replace(${key}, '\\', '\\\\'), '"', '\\"') || '"'`;

/**
 * The key of `e`'s `on` columns as text (NULL: no key): one column's ('x': ambiguous), or a composite: each part
 * quoted (`quoted`), joined by commas, so NULL when a part is, and each part's expression evaluated once (see the
 * header; `ambiguousKey` tells an ambiguous one).
 */
export function keySql(dialect: SqlDialect, columns: readonly KeyColumn[]): Sql {
  if (columns.length === 1) return columnKey(dialect, columns[0]!, false);
  return sql`(${joinSql(
    columns.map((column) => quoted(columnKey(dialect, column, true))),
    ` || ',' || `,
  )})`;
}

/**
 * Whether `key` (keySql's of `columns`) is ambiguous: 'x', or a composite with an ambiguous part, `"x"` between
 * commas (inside a quoted part a `"` is escaped, so an unescaped one is a part's edge).
 */
export function ambiguousKey(dialect: SqlDialect, columns: readonly KeyColumn[], key: Sql | string): Sql {
  const k = typeof key === 'string' ? raw(key) : key;
  if (columns.length === 1) return sql`${k} = 'x'`;
  const find = dialect.name === 'postgres' ? 'strpos' : 'instr';
  return sql`${raw(find)}(',' || ${k} || ',', ',"x",') > 0`;
}

/** The parts of a select statement its joins add (select.ts). */
export interface JoinParts {
  /** `j0 AS MATERIALIZED (…), …`: each join's keys and their number of joined matches. */
  tables: Sql;
  /** LEFT JOINs to append to a FROM of parent entries `e`; `requiredOnly` for the count. */
  from(requiredOnly: boolean): Sql;
  /** The required joins' condition (TRUE when none). */
  required: Sql;
  /** Select terms `jv<i>`: each join's value for the parent `e`. */
  values: string[];
  /** Whether some joined match has an ambiguous key (the parent side is checked by the caller). */
  ambiguous: Sql;
}

/**
 * `sum`: query/joins.ts adds numericValue of the column over the matches, in doubles, in the joined order. The
 * database adds exactly (SQLite integers, PostgreSQL numeric), so the two agree when every value is an integer and
 * the total of their absolute values is at most 2^52 (every partial sum is then exact, in any order). The column's
 * key (above) tells the values apart: `n` + an integer of up to 16 digits is added; a number of another form, or an
 * ambiguous key (a string that may be numeric, an array, an object), flags the statement (`bad`, or a total past
 * 2^52); other strings, booleans, null and missing add nothing, as numericValue gives NaN for them.
 */
function summed(dialect: SqlDialect, column: KeyColumn): { value: Sql; bad: Sql } {
  const key = keySql(dialect, [column]);
  if (dialect.name === 'postgres') {
    return {
      value: sql`CASE WHEN ${key} ~ '^n-?[0-9]{1,16}$' THEN CAST(substr(${key}, 2) AS numeric) END`,
      bad: sql`CASE WHEN ${key} = 'x' OR (${key} LIKE 'n%' AND ${key} !~ '^n-?[0-9]{1,16}$') THEN 1 ELSE 0 END`,
    };
  }
  const integer = (k: Sql) =>
    sql`(length(${k}) <= 18 AND (substr(${k}, 2) GLOB '[0-9]*' OR substr(${k}, 2) GLOB '-[0-9]*') AND NOT (substr(${k}, 3) GLOB '*[^0-9]*'))`;
  return {
    value: sql`CASE WHEN ${key} GLOB 'n*' AND ${integer(key)} THEN CAST(substr(${key}, 2) AS INTEGER) END`,
    bad: sql`CASE WHEN ${key} = 'x' OR (${key} GLOB 'n*' AND NOT ${integer(key)}) THEN 1 ELSE 0 END`,
  };
}

/** Past this total of absolute values, a sum of integers may be rounded in doubles. */
const EXACT_SUM = 2 ** 52;

export function joinParts(dialect: SqlDialect, joins: readonly SqlJoinPlan[]): JoinParts {
  const collate = dialect.name === 'postgres' ? ' COLLATE "C"' : '';
  const tables = joins.map((join, i) => {
    if (join.dataSourceId === null) throw new Error(`Join ${join.name}: data source not resolved`);
    const sum = join.sum ? summed(dialect, join.sum) : null;
    const inner = sum ? sql`, ${sum.value} AS v, ${sum.bad} AS bad` : raw('');
    const outer = raw(sum ? ', SUM(t.v) AS s, MAX(t.bad) AS bad, SUM(ABS(t.v)) AS a' : '');
    return sql`j${raw(String(i))} AS MATERIALIZED (SELECT t.k, COUNT(*) AS n${outer} FROM (SELECT ${keySql(dialect, join.joined)} AS k${inner} FROM ${dialect.entries(join.dataSourceId)} WHERE ${renderCond(dialect, join.where)}) t WHERE t.k IS NOT NULL GROUP BY t.k)`;
  });
  const left = (i: number) => sql` LEFT JOIN j${raw(String(i))} ON j${raw(String(i))}.k${raw(collate)} = ${keySql(dialect, joins[i]!.parent)}${raw(collate)}`;
  const required = joins.flatMap((join, i) => (join.required ? [`j${i}.k IS NOT NULL`] : []));
  return {
    tables: joinSql(tables, ', '),
    from: (requiredOnly) =>
      joinSql(
        joins.flatMap((join, i) => (requiredOnly && !join.required ? [] : [left(i)])),
        '',
      ),
    required: raw(required.length > 0 ? `(${required.join(' AND ')})` : 'TRUE'),
    values: joins.map((join, i) =>
      join.mode === 'has' ? `(j${i}.k IS NOT NULL) AS jv${i}` : join.mode === 'count' ? `COALESCE(j${i}.n, 0) AS jv${i}` : `COALESCE(j${i}.s, 0) AS jv${i}`,
    ),
    ambiguous: joinSql(
      joins.map(
        (join, i) =>
          sql`EXISTS (SELECT 1 FROM j${raw(String(i))} WHERE ${ambiguousKey(dialect, join.joined, 'k')}${raw(join.sum ? ` OR bad = 1 OR a > ${EXACT_SUM}` : '')})`,
      ),
      ' OR ',
    ),
  };
}
