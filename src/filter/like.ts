/**
 * `$like` / `$iLike` without a regular expression engine. A pattern with a `%` is a SQL LIKE pattern, anchored
 * at both ends (`%` any run of characters, `_` one character); without `%` it means "contains" (`_` is then a
 * plain character). The
 * wildcard match is the greedy two-pointer algorithm: O(text × pattern) at worst, so `'%%%%%%x'` costs what
 * `'%x'` does (runs of `%` collapse first), never a backtracking blow-up.
 *
 * Case-insensitive comparison folds each UTF-16 code unit the way a JavaScript `i` regular expression does
 * (ECMAScript Canonicalize without `u`), so the answers equal the former regex-based ones.
 */

const ASCII = /^[\x00-\x7f]*$/;

/** Folds one string, code unit by code unit (the length never changes). */
export function foldCase(text: string): string {
  // ASCII text: upper-casing maps exactly a-z to A-Z, as Canonicalize does.
  if (ASCII.test(text)) return text.toUpperCase();
  let out = '';
  let changed = false;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    let folded = code;
    if (code >= 97 && code <= 122) folded = code - 32;
    else if (code >= 128) {
      const upper = String.fromCharCode(code).toUpperCase();
      if (upper.length === 1 && upper.charCodeAt(0) >= 128) folded = upper.charCodeAt(0);
    }
    if (folded !== code) changed = true;
    out += String.fromCharCode(folded);
  }
  return changed ? out : text;
}

function wildcardMatch(text: string, pattern: string): boolean {
  let t = 0;
  let p = 0;
  let starP = -1;
  let starT = 0;
  while (t < text.length) {
    const c = pattern.charCodeAt(p);
    if (p < pattern.length && c !== 37 /* % */ && (c === 95 /* _ */ || c === text.charCodeAt(t))) {
      t++;
      p++;
    } else if (p < pattern.length && c === 37) {
      starP = p++;
      starT = t;
    } else if (starP >= 0) {
      p = starP + 1;
      t = ++starT;
    } else return false;
  }
  while (p < pattern.length && pattern.charCodeAt(p) === 37) p++;
  return p === pattern.length;
}

/** A test of strings (numbers are tested as their text; anything else never matches). */
export function likeMatcher(pattern: string, caseInsensitive: boolean): (value: unknown) => boolean {
  const wildcard = pattern.includes('%');
  const needle = (caseInsensitive ? foldCase(pattern) : pattern).replace(/%{2,}/g, '%');
  return (value) => {
    if (typeof value !== 'string' && typeof value !== 'number') return false;
    const raw = String(value);
    const text = caseInsensitive ? foldCase(raw) : raw;
    return wildcard ? wildcardMatch(text, needle) : text.includes(needle);
  };
}
