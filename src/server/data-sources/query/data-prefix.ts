import { isPlainObject } from './errors.js';
import { setOwn } from './values.js';

/**
 * `data.<column>` in a data source `where` names the data column, as it does in `order` and `attributes`
 * (issue 18: `{ 'data.name': 'x' }` used to match nothing, silently). The prefix is dropped from field names at
 * the top level and inside `$and`/`$or`/`$nor`; operator values are left alone (`$elemMatch` paths are relative
 * to the element). A data column named `data` is then reached as `data.data.<key>`. When a prefixed and a bare
 * name meet (`{ name: 'x', 'data.name': 'y' }`), both conditions hold (`$and`).
 */
/** Documents this module wrote (a query compiled twice, e.g. by the service then by runQuery, is rewritten once). */
const rewritten = new WeakSet<object>();

export function withoutDataPrefix(where: unknown): unknown {
  if (!isPlainObject(where) || rewritten.has(where)) return where;
  const out: Record<string, unknown> = {};
  const both: Record<string, unknown>[] = [];
  for (const [key, value] of Object.entries(where)) {
    if ((key === '$and' || key === '$or' || key === '$nor') && Array.isArray(value)) {
      setOwn(out, key, value.map(withoutDataPrefix));
      continue;
    }
    // `data.$id` stays a (refused) field name rather than becoming the entry-field operator `$id`.
    const name = key.startsWith('data.') && key.length > 5 && key[5] !== '$' ? key.slice(5) : key;
    if (Object.hasOwn(out, name)) both.push({ [name]: value });
    else setOwn(out, name, value);
  }
  if (both.length > 0) {
    // An `$and` that is not a list is refused (400) as sent, never merged into a wider match.
    if (Object.hasOwn(out, '$and') && !Array.isArray(out.$and)) return where;
    setOwn(out, '$and', [...((out.$and as unknown[] | undefined) ?? []), ...both]);
  }
  rewritten.add(out);
  return out;
}
