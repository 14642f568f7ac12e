/**
 * Which data paths the SQL translation accepts. sift splits a `where` key on dots and reads each segment
 * with `item[segment]`: a numeric segment indexes arrays, `length` reads an array's or a string's length, and
 * names of prototype members (`constructor`, `toFixed`, `map`, …) read functions. None of that has a SQL
 * equivalent, so such paths stay on the JS evaluator. Accepted segments are letters, digits, `_`, `-` and
 * spaces (never only digits), which also keeps them safe inside SQL literals and JSON paths.
 */
const SEGMENT = /^[\p{L}\p{N}_\- ]+$/u;
const PROTOTYPES: readonly object[] = [Object.prototype, Array.prototype, String.prototype, Number.prototype, Boolean.prototype, Function.prototype];
const MAX_SEGMENTS = 8;

export function isTranslatableSegment(segment: string): boolean {
  if (!SEGMENT.test(segment) || /^\d+$/.test(segment) || segment.trim() !== segment) return false;
  return !PROTOTYPES.some((proto) => segment in proto);
}

/** The segments of a `where` key, or null when it cannot be translated. */
export function pathSegments(key: string): string[] | null {
  const segments = key.split('.');
  if (segments.length > MAX_SEGMENTS || !segments.every(isTranslatableSegment)) return null;
  return segments;
}
