/**
 * Which data paths the SQL translation accepts. sift splits a `where` key on dots and reads each segment
 * with `item[segment]`: a numeric segment indexes arrays, `length` reads an array's or a string's length, and
 * names of prototype members (`constructor`, `toFixed`, `map`, …) read functions. None of that has a SQL
 * equivalent, so such paths stay on the JS evaluator. Accepted segments are letters, digits, `_`, `-` and
 * spaces (never only digits), which also keeps them safe inside SQL literals and JSON paths.
 *
 * The first segment is read on the entry's data, always a JSON object, which inherits Object.prototype's
 * members only: there a name of another prototype (`at`, `map`, `length`, `trim`, …) is a plain own read,
 * and translates. Later segments may land on an array or a string, so they must be no prototype's name.
 */
const SEGMENT = /^[\p{L}\p{N}_\- ]+$/u;
const PROTOTYPES: readonly object[] = [Object.prototype, Array.prototype, String.prototype, Number.prototype, Boolean.prototype, Function.prototype];
const MAX_SEGMENTS = 8;

const isPlainSegment = (segment: string) => SEGMENT.test(segment) && !/^\d+$/.test(segment) && segment.trim() === segment;

/** A segment that translates wherever it stands in a path. */
export function isTranslatableSegment(segment: string): boolean {
  return isPlainSegment(segment) && !PROTOTYPES.some((proto) => segment in proto);
}

/** A segment that translates as the first of a path (read on the data object). */
const isTranslatableFirst = (segment: string) => isPlainSegment(segment) && !(segment in Object.prototype);

/** The segments of a `where` key, or null when it cannot be translated. */
export function pathSegments(key: string): string[] | null {
  const segments = key.split('.');
  if (segments.length > MAX_SEGMENTS || !isTranslatableFirst(segments[0]!) || !segments.slice(1).every(isTranslatableSegment)) return null;
  return segments;
}
