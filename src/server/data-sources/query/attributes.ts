import { invalidQuery } from './errors.js';
import type { EntryRecord } from './types.js';
import { compileDataPath, isEntryField, setOwn, type EntryField } from './values.js';

/**
 * `attributes`: entry fields (`id`, `dataSourceId`, `order`, `createdAt`, `updatedAt`, `deletedAt`),
 * `data` (all of it), `data.<column>` or a bare data column name (`data.id` reaches a data column named
 * `id`). Returned entries keep only the listed entry fields, and `data` (present when any data column is
 * listed) keeps only the listed columns; missing columns are left out. A dotted column keeps its nesting
 * unless the data holds that literal dotted key.
 */
export type Projection = (entry: EntryRecord) => Record<string, unknown>;

export function checkAttributes(attributes: unknown, field = 'attributes'): string[] | undefined {
  if (attributes === undefined || attributes === null) return undefined;
  if (!Array.isArray(attributes)) throw invalidQuery(`${field} must be an array of column names`);
  attributes.forEach((name, i) => {
    if (typeof name !== 'string' || name === '' || name === 'data.') throw invalidQuery(`${field}[${i}] must be a column name`);
  });
  return attributes as string[];
}

const hasOwn = Object.prototype.hasOwnProperty;

function setPath(target: Record<string, unknown>, segments: string[], value: unknown) {
  let node = target;
  for (let i = 0; i < segments.length - 1; i++) {
    const key = segments[i]!;
    const next = hasOwn.call(node, key) ? node[key] : undefined;
    if (next === null || typeof next !== 'object' || Array.isArray(next)) setOwn(node, key, {});
    node = node[key] as Record<string, unknown>;
  }
  setOwn(node, segments[segments.length - 1]!, value);
}

/** Compiles an attribute list into a projection (null when every field is kept). */
export function compileAttributes(attributes: unknown, field = 'attributes'): Projection | null {
  const names = checkAttributes(attributes, field);
  if (!names) return null;
  const entryFields: EntryField[] = [];
  let wholeData = false;
  const columns: { column: string; get: (data: unknown) => unknown; segments: string[] }[] = [];
  for (const name of names) {
    if (isEntryField(name)) {
      if (!entryFields.includes(name)) entryFields.push(name);
    } else if (name === 'data') {
      wholeData = true;
    } else {
      const column = name.startsWith('data.') ? name.slice(5) : name;
      if (!columns.some((c) => c.column === column)) columns.push({ column, get: compileDataPath(column), segments: column.split('.') });
    }
  }
  return (entry) => {
    const out: Record<string, unknown> = {};
    for (const name of entryFields) if (entry[name] !== undefined) out[name] = entry[name];
    if (wholeData) out.data = entry.data;
    else if (columns.length > 0) {
      const data: Record<string, unknown> = {};
      for (const { column, get, segments } of columns) {
        const value = get(entry.data);
        if (value === undefined) continue;
        if (segments.length === 1 || hasOwn.call(entry.data, column)) setOwn(data, column, value);
        else setPath(data, segments, value);
      }
      out.data = data;
    }
    return out;
  };
}
