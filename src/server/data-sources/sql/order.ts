import type { OrderKey } from '../query/order.js';
import { ENTRY_COLUMNS, type EntryColumn } from './conditions.js';

/**
 * `order` (with its default tie-breakers, as compileOrder gives it) as entry columns, or null. order.ts sorts
 * numbers (and numeric strings) as numbers, other text by UTF-16 code units, then null/missing; entry
 * columns have one type each (`id`, `order` numbers; `createdAt`, `updatedAt` ISO 8601 text, never numeric),
 * so a plain ORDER BY is that order. Data columns may mix types (numeric strings, booleans, objects sort
 * by rules SQL does not share): they stay on the JS evaluator. `dataSourceId` and `deletedAt` are the same
 * for every entry of a query and are left out.
 */
export interface SqlOrderTerm {
  column: EntryColumn;
  desc: boolean;
}

export function translateOrder(keys: readonly OrderKey[]): SqlOrderTerm[] | null {
  const terms: SqlOrderTerm[] = [];
  for (const key of keys) {
    if (key.column === 'dataSourceId' || key.column === 'deletedAt') continue;
    if (!Object.prototype.hasOwnProperty.call(ENTRY_COLUMNS, key.column)) return null;
    const column = ENTRY_COLUMNS[key.column as keyof typeof ENTRY_COLUMNS].column;
    terms.push({ column, desc: key.desc });
    if (column === 'id') break; // unique: later keys never decide
  }
  return terms;
}
