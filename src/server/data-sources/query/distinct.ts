/**
 * `distinct: true` of a select: rows equal to an earlier row of the answer are left out. Rows are compared as
 * returned (after `attributes` and joins), by value: object keys in any order, arrays in order. Without
 * `attributes` every entry differs (its `id`), so `distinct` matters with `attributes` that leave `id` out.
 */

/** A text equal for equal JSON values, whatever the order of object keys. */
export function canonicalKey(value: unknown): string {
  if (value === null || typeof value !== 'object') return value === undefined ? 'u' : JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonicalKey).join(',')}]`;
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record)
    .filter((key) => record[key] !== undefined)
    .sort();
  return `{${keys.map((key) => `${JSON.stringify(key)}:${canonicalKey(record[key])}`).join(',')}}`;
}

/** The rows without those equal to an earlier one (the first of equal rows is kept, in order). */
export function distinctRows<T>(rows: readonly T[]): T[] {
  const seen = new Set<string>();
  const out: T[] = [];
  for (const row of rows) {
    const key = canonicalKey(row);
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(row);
  }
  return out;
}
