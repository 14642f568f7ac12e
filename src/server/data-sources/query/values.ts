import type { EntryRecord } from './types.js';

const hasOwn = Object.prototype.hasOwnProperty;

/**
 * `target[key] = value` as an own data property even for `__proto__` (an assignment would replace the
 * object's prototype and lose the column). Use it wherever a key comes from stored data or a request.
 */
export function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  else target[key] = value;
}

/**
 * Compiles a data column into a getter. A key that exists literally (`"a.b"`) wins; otherwise dots walk into
 * nested objects and arrays (`Role.Name`, `tags.0`). Only own properties are read (never the prototype).
 */
export function compileDataPath(column: string): (data: unknown) => unknown {
  if (!column.includes('.')) {
    if (!(column in Object.prototype)) {
      // JSON data only inherits Object.prototype's members, so a plain read is an own read for other names.
      return (data) => (data !== null && typeof data === 'object' ? (data as Record<string, unknown>)[column] : undefined);
    }
    return (data) => (data !== null && typeof data === 'object' && hasOwn.call(data, column) ? (data as Record<string, unknown>)[column] : undefined);
  }
  const segments = column.split('.');
  return (data) => {
    if (data === null || typeof data !== 'object') return undefined;
    if (hasOwn.call(data, column)) return (data as Record<string, unknown>)[column];
    let value: unknown = data;
    for (let i = 0; i < segments.length; i++) {
      if (value === null || typeof value !== 'object' || !hasOwn.call(value, segments[i]!)) return undefined;
      value = (value as Record<string, unknown>)[segments[i]!];
    }
    return value;
  };
}

/** Entry fields that `order`, `attributes` and join `on` can name directly. */
export const ENTRY_FIELDS = ['id', 'dataSourceId', 'order', 'createdAt', 'updatedAt', 'deletedAt'] as const;
export type EntryField = (typeof ENTRY_FIELDS)[number];
export const isEntryField = (name: string): name is EntryField => (ENTRY_FIELDS as readonly string[]).includes(name);

/**
 * A column of an entry: an entry field (`id`, `order`, `createdAt`, …), `data.<column>`, or a bare data column.
 * `data.id` reaches a data column named like an entry field.
 */
export function compileEntryColumn(column: string): (entry: EntryRecord) => unknown {
  if (isEntryField(column)) return (entry) => entry[column];
  const get = compileDataPath(column.startsWith('data.') ? column.slice(5) : column);
  return (entry) => get(entry.data);
}

/**
 * The numeric reading of a value, or NaN when it is not a number or a numeric string. Numeric strings are
 * decimal numbers with optional sign, fraction, exponent and surrounding spaces (`"12"`, `" -3.5 "`,
 * `"1e3"`); not `""`, hex, binary, octal or `"Infinity"`.
 */
export function numericValue(value: unknown): number {
  if (typeof value === 'number') return value;
  if (typeof value !== 'string' || !isDecimal(value)) return NaN;
  const n = Number(value);
  return n === Infinity || n === -Infinity ? NaN : n;
}

const isSpace = (c: number) => c === 32 || c === 9 || c === 10 || c === 13;
const isDigit = (c: number) => c >= 48 && c <= 57;

/** `[spaces][+|-](digits[.digits*] | .digits)[(e|E)[+|-]digits][spaces]`, scanned without a RegExp (hot path of sorting). */
function isDecimal(s: string): boolean {
  const n = s.length;
  let i = 0;
  while (i < n && isSpace(s.charCodeAt(i))) i++;
  if (i < n && (s.charCodeAt(i) === 43 || s.charCodeAt(i) === 45)) i++;
  let digits = 0;
  while (i < n && isDigit(s.charCodeAt(i))) i++, digits++;
  if (i < n && s.charCodeAt(i) === 46) {
    i++;
    while (i < n && isDigit(s.charCodeAt(i))) i++, digits++;
  }
  if (digits === 0) return false;
  if (i < n && (s.charCodeAt(i) === 101 || s.charCodeAt(i) === 69)) {
    i++;
    if (i < n && (s.charCodeAt(i) === 43 || s.charCodeAt(i) === 45)) i++;
    let exponent = 0;
    while (i < n && isDigit(s.charCodeAt(i))) i++, exponent++;
    if (exponent === 0) return false;
  }
  while (i < n && isSpace(s.charCodeAt(i))) i++;
  return i === n;
}

/** Text of a scalar for case-insensitive comparisons; null for null/undefined. */
export function textOf(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value);
}
