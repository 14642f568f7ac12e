import { isPlainObject } from './errors.js';
import { setOwn } from './values.js';

/**
 * `data.<column>` in a data source `where` names the data column, as it does in `order` and `attributes`
 * (issue 18: `{ 'data.name': 'x' }` used to match nothing, silently). The prefix is dropped from field names at
 * the top level and inside `$and`/`$or`/`$nor`; operator values are left alone (`$elemMatch` paths are relative
 * to the element). A data column named `data` is then reached as `data.data.<key>`. When a prefixed and a bare
 * name meet (`{ name: 'x', 'data.name': 'y' }`), both conditions hold (`$and`).
 */
export function withoutDataPrefix(where: unknown): unknown {
  if (!isPlainObject(where)) return where;
  const out: Record<string, unknown> = {};
  const both: Record<string, unknown>[] = [];
  for (const [key, value] of Object.entries(where)) {
    if ((key === '$and' || key === '$or' || key === '$nor') && Array.isArray(value)) {
      setOwn(out, key, value.map(withoutDataPrefix));
      continue;
    }
    const name = key.startsWith('data.') && key.length > 5 ? key.slice(5) : key;
    if (Object.hasOwn(out, name)) both.push({ [name]: value });
    else setOwn(out, name, value);
  }
  if (both.length === 0) return out;
  const and = Array.isArray(out.$and) ? out.$and : [];
  setOwn(out, '$and', [...and, ...both]);
  return out;
}
