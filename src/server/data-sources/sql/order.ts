import type { OrderKey } from '../query/order.js';
import { ENTRY_COLUMNS, type EntryColumn } from './conditions.js';
import type { SqlDialect } from './dialect.js';
import { pathSegments } from './paths.js';

/**
 * `order` (with its default tie-breakers, as compileOrder gives it) as SQL order terms, or null. Entry
 * columns have one type each (`id`, `order` numbers; `createdAt`, `updatedAt` ISO 8601 text, never numeric),
 * so a plain ORDER BY is order.ts's order. A data column (`age`, `data.age`, `address.city`) is ordered by
 * its sort key (keys.ts: rank, number, text), which is order.ts's order for every value but the "ambiguous"
 * ones (numeric strings, objects, arrays, …): select.ts checks in the same statement that no matching row
 * has one, else the JS evaluator answers. Paths the translation refuses (numeric segments such as `tags.0`,
 * prototype names) stay on the JS evaluator. `dataSourceId` and `deletedAt` are the same for every entry of
 * a query and are left out.
 */
export type SqlOrderTerm = { kind: 'column'; column: EntryColumn; desc: boolean } | { kind: 'path'; segments: string[]; desc: boolean };

export function translateOrder(keys: readonly OrderKey[]): SqlOrderTerm[] | null {
  const terms: SqlOrderTerm[] = [];
  for (const key of keys) {
    if (key.column === 'dataSourceId' || key.column === 'deletedAt') continue;
    if (Object.hasOwn(ENTRY_COLUMNS, key.column)) {
      const column = ENTRY_COLUMNS[key.column as keyof typeof ENTRY_COLUMNS].column;
      terms.push({ kind: 'column', column, desc: key.desc });
      if (column === 'id') break; // unique: later keys never decide
      continue;
    }
    const segments = pathSegments(key.column.startsWith('data.') ? key.column.slice(5) : key.column);
    if (!segments) return null;
    terms.push({ kind: 'path', segments, desc: key.desc });
  }
  return terms;
}

/**
 * ORDER BY terms of `order` (a plan's), over `e` (the entries) or `p` (a page's output, its key columns `k<i>`):
 * `select` are those key columns, computed over `e`.
 */
export function orderTerms(dialect: SqlDialect, order: readonly SqlOrderTerm[], alias: 'e' | 'p'): { select: string[]; orderBy: string } {
  const select: string[] = [];
  const terms = order.map((term, i) => {
    if (term.kind === 'column') return dialect.orderTerm(alias, term.column, term.desc);
    const dir = term.desc ? 'DESC' : 'ASC';
    const key = dialect.sortKey(term.segments, 'e.data', 'e.doc');
    const names = [`k${i}r`, `k${i}n`, `k${i}t`];
    if (alias === 'e') select.push(`${key.rank} AS ${names[0]}`, `${key.num} AS ${names[1]}`, `${key.txt} AS ${names[2]}`);
    const parts = alias === 'e' ? [key.rank, key.num, key.txt] : names.map((name) => `p.${name}`);
    return parts.map((part) => `${part} ${dir}`).join(', ');
  });
  return { select, orderBy: terms.join(', ') };
}
