import type { Cond, EntryColumn, ValueTest } from './conditions.js';
import { joinSql, raw, sql, type Sql } from './fragment.js';

/**
 * What differs between SQLite (JSON1 on the `data` text) and PostgreSQL (jsonb): how a data path, an
 * entry column and an order term are rendered. Both render the same Cond with the same meaning.
 */
export interface SqlDialect {
  readonly name: 'sqlite' | 'postgres';
  /** The entries of one data source as `e` (columns id, data, sort_order, created_at, updated_at). */
  entries(dataSourceId: number): Sql;
  /** Some value sift reaches on `segments` of `e`'s data matches `test`; never NULL. */
  path(segments: readonly string[], test: ValueTest): Sql;
  /** The entry column matches `test`; never NULL. */
  column(column: EntryColumn, test: Extract<ValueTest, { kind: 'in' } | { kind: 'cmp' }>): Sql;
  /** One ORDER BY term on `alias.column` with JS's order (order.ts) for that column. */
  orderTerm(alias: string, column: EntryColumn, desc: boolean): string;
}

/** Renders a Cond; the result is TRUE or FALSE, never NULL (so NOT is exact). */
export function renderCond(dialect: SqlDialect, cond: Cond): Sql {
  switch (cond.kind) {
    case 'const':
      return raw(cond.value ? 'TRUE' : 'FALSE');
    case 'and':
    case 'or':
      return sql`(${joinSql(cond.items.map((item) => renderCond(dialect, item)), cond.kind === 'and' ? ' AND ' : ' OR ')})`;
    case 'not':
      return sql`(NOT ${renderCond(dialect, cond.item)})`;
    case 'path':
      return dialect.path(cond.segments, cond.test);
    case 'column':
      return dialect.column(cond.column, cond.test);
  }
}

/** `?, ?, …` for a list of parameters. */
export const placeholders = (values: readonly (string | number)[]): Sql => joinSql(values.map((v) => sql`${v}`), ', ');
