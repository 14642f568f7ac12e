import type { Cond, EntryColumn, FilterTest, ValueTest } from './conditions.js';
import { joinSql, raw, sql, type Sql } from './fragment.js';
import type { SortKey } from './keys.js';

/**
 * What differs between SQLite (JSON1 on the `data` text) and PostgreSQL (jsonb): how a data path, an
 * entry column and an order term are rendered. Both render the same Cond with the same meaning.
 */
export interface SqlDialect {
  readonly name: 'sqlite' | 'postgres';
  /**
   * The entries of one data source as `e` (columns id, data, sort_order, created_at, updated_at). The id is
   * written into the text (not a parameter) so the planner can use the data source's partial indexes;
   * `index`: the expression index the query should go through (SQLite: INDEXED BY, as the planner has no
   * statistics to prefer it; PostgreSQL: the subquery is not fenced, so the planner can use it). `paged`: the
   * rows are read in a page's order and the read may stop at its LIMIT (PostgreSQL: the table stays visible to
   * the outer query, so its order index can end the read early; SQLite needs nothing).
   */
  entries(dataSourceId: number, index?: string | null, paged?: boolean): Sql;
  /**
   * The entries of one data source with an id above `afterId`, as `e` (the same columns), for a scan in id order
   * that stops at its LIMIT (candidates.ts): nothing is fenced, so the id order and the bound reach the table.
   */
  entriesAfter(dataSourceId: number, afterId: number): Sql;
  /**
   * keys.ts's sort key of a data path over the `data` column named `data` (`e.data`, or `data` in DDL);
   * `doc`: a column holding `data` already parsed, for the `e` of `entries` (PostgreSQL reads it instead of
   * parsing `data` once per use; through an index the subquery is flattened, so the key is the index's again).
   */
  sortKey(segments: readonly string[], data: string, doc?: string): SortKey;
  /** Some value sift reaches on `segments` of `e`'s data matches `test`; never NULL. */
  path(segments: readonly string[], test: ValueTest): Sql;
  /** The `$filters` test on the value filters.ts reads at `segments` (compileDataPath); never NULL. */
  filter(segments: readonly string[], test: FilterTest): Sql;
  /** The entry column matches `test`; never NULL. */
  column(column: EntryColumn, test: Extract<ValueTest, { kind: 'in' } | { kind: 'cmp' }>): Sql;
  /** One ORDER BY term on `alias.column` with JS's order (order.ts) for that column. */
  orderTerm(alias: string, column: EntryColumn, desc: boolean): string;
  /**
   * What `attributes` return for a data path of `e` (distinct.ts): `key`, equal for two rows exactly when their
   * values are equal for canonicalKey (SQL NULL when missing), provided `odd` (over `e`) is false: the value is an
   * object or an array, or the data holds the literal dotted key (which the attribute would read instead).
   */
  distinctKey(segments: readonly string[]): { key: string; odd: string };
}

/** Renders a Cond; the result is TRUE or FALSE, never NULL (so NOT is exact). */
export function renderCond(dialect: SqlDialect, cond: Cond): Sql {
  switch (cond.kind) {
    case 'const':
      return raw(cond.value ? 'TRUE' : 'FALSE');
    case 'and':
    case 'or':
      return sql`(${joinSql(
        cond.items.map((item) => renderCond(dialect, item)),
        cond.kind === 'and' ? ' AND ' : ' OR ',
      )})`;
    case 'not':
      return sql`(NOT ${renderCond(dialect, cond.item)})`;
    case 'path':
      return dialect.path(cond.segments, cond.test);
    case 'column':
      return dialect.column(cond.column, cond.test);
    case 'filter':
      return dialect.filter(cond.segments, cond.test);
  }
}

/** `?, ?, …` for a list of parameters. */
export const placeholders = (values: readonly (string | number)[]): Sql =>
  joinSql(
    values.map((v) => sql`${v}`),
    ', ',
  );

/** A data source id as SQL text (only ever a positive integer). */
export function idText(dataSourceId: number): Sql {
  if (!Number.isSafeInteger(dataSourceId) || dataSourceId <= 0) throw new Error(`Invalid data source id ${dataSourceId}`);
  return raw(String(dataSourceId));
}
