import { HttpError } from './errors.js';

/**
 * How deeply `value` nests arrays and objects (a scalar is 0, `{}` and `[]` are 1, `{ a: [1] }` is 2), counted
 * with an explicit stack so that the check itself never overflows the call stack. Stops as soon as the depth
 * passes `limit` (returns limit + 1), so its cost is bounded by the size of the value.
 */
export function nestingDepth(value: unknown, limit: number): number {
  if (typeof value !== 'object' || value === null) return 0;
  const values: unknown[] = [value];
  const depths: number[] = [1];
  let deepest = 0;
  while (values.length > 0) {
    const current = values.pop() as object;
    const depth = depths.pop()!;
    if (depth > deepest) {
      deepest = depth;
      if (deepest > limit) return deepest;
    }
    const children = Array.isArray(current) ? current : Object.values(current);
    for (let i = 0; i < children.length; i++) {
      const child = children[i];
      if (typeof child === 'object' && child !== null) {
        values.push(child);
        depths.push(depth + 1);
      }
    }
  }
  return deepest;
}

/**
 * 400 `NESTING_TOO_DEEP` when `value` nests deeper than `limit` levels; the message names the field and the
 * limit (`limits.<limitName>`). Every parsed body is checked against `limits.bodyDepth` (http/body.ts) and
 * every where-like input (`where`, `$filters`, `scope`, trigger `where`, `aggregate`, `join`) against
 * `limits.filterDepth`, so deep input is refused before any recursive code (sift, mingo, JSON.stringify) sees it.
 */
export function checkNesting(value: unknown, limit: number, field: string, limitName: 'bodyDepth' | 'filterDepth'): void {
  if (nestingDepth(value, limit) > limit) {
    throw new HttpError(400, 'NESTING_TOO_DEEP', `${field} is nested deeper than ${limit} levels (limits.${limitName})`, { field, limit });
  }
}

/** checkNesting on each of `fields` of `body` present (where-like inputs, `limits.filterDepth`), named `<prefix><field>`. */
export function checkFilterFields(body: unknown, limit: number, fields: readonly string[], prefix = ''): void {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return;
  for (const field of fields) {
    const value = (body as Record<string, unknown>)[field];
    if (value !== undefined) checkNesting(value, limit, `Field "${prefix}${field}"`, 'filterDepth');
  }
}
