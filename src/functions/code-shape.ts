/**
 * Whether JavaScript source that compiles as an expression is one function expression (`(settings,
 * context) => …`, `async function (…) { … }`, either in parentheses), found without running it. A
 * scanner that knows just enough of the language (comments, strings, templates, regular expressions,
 * brackets) finds where the function at the start ends; `shapeOf` then says whether code follows it.
 * Its regular-expression guess can be wrong in rare code: it then answers `unknown` (the caller
 * accepts), or `other` with a `prefix` the caller compiles to confirm the function really ends there.
 */

export type CodeShape =
  | { kind: 'function' }
  /** Not one function expression: `at` is where the rest begins; `prefix`, when set, is the complete function before it. */
  | { kind: 'other'; at: number; prefix?: string }
  | { kind: 'unknown' };

const CLOSER: Record<string, string> = { '(': ')', '[': ']', '{': '}' };
/** Words after which `/` starts a regular expression, not a division. */
const BEFORE_REGEX = new Set(['return', 'typeof', 'case', 'do', 'else', 'in', 'of', 'new', 'delete', 'void', 'throw', 'instanceof', 'yield', 'await']);
const WORD = /[A-Za-z0-9_$\u0080-\uffff]+/y;
const IDENTIFIER = /^[A-Za-z_$\u0080-\uffff]/;

export function shapeOf(s: string, base = 0): CodeShape {
  try {
    const i = skipTrivia(s, 0);
    const end = functionEnd(s, i);
    if (end === -1) return { kind: 'unknown' };
    if (end !== undefined) return skipTrivia(s, end) >= s.length ? { kind: 'function' } : { kind: 'other', at: base + end, prefix: s.slice(0, end) };
    if (s[i] !== '(') return { kind: 'other', at: base + i };
    const close = scan(s, i + 1, ')');
    if (close < 0) return { kind: 'unknown' };
    if (skipTrivia(s, close) < s.length) return { kind: 'other', at: base + close, prefix: s.slice(0, close) };
    return shapeOf(s.slice(i + 1, close - 1), base + i + 1);
  } catch {
    return { kind: 'unknown' }; // e.g. a host stack overflow on absurd nesting
  }
}

/** Index just past the function expression starting at `i`; undefined when none starts there; -1 when the scan failed. */
function functionEnd(s: string, i: number): number | undefined {
  let j = i;
  let word = wordAt(s, j);
  if (word === 'async') {
    const k = skipTrivia(s, j + 5);
    if (s.startsWith('=>', k)) return arrowBodyEnd(s, k + 2); // `async => …`: a parameter named async
    j = k;
    word = wordAt(s, j);
  }
  if (word === 'function') {
    j = skipTrivia(s, j + word.length);
    if (s[j] === '*') j = skipTrivia(s, j + 1);
    const name = wordAt(s, j);
    if (name) j = skipTrivia(s, j + name.length);
    if (s[j] !== '(') return -1;
    j = scan(s, j + 1, ')');
    if (j < 0) return -1;
    j = skipTrivia(s, j);
    return s[j] === '{' ? scan(s, j + 1, '}') : -1;
  }
  if (word) j = skipTrivia(s, j + word.length);
  else if (s[j] === '(') {
    j = scan(s, j + 1, ')');
    if (j < 0) return undefined;
    j = skipTrivia(s, j);
  } else return undefined;
  return s.startsWith('=>', j) ? arrowBodyEnd(s, j + 2) : undefined;
}

function arrowBodyEnd(s: string, j: number): number {
  j = skipTrivia(s, j);
  return s[j] === '{' ? scan(s, j + 1, '}') : scan(s, j, undefined);
}

function wordAt(s: string, i: number): string | undefined {
  if (!IDENTIFIER.test(s[i] ?? '')) return undefined;
  WORD.lastIndex = i;
  return WORD.exec(s)?.[0];
}

/**
 * Scans from `i`: with a `closer`, to just past the matching closer (-1 when unbalanced); without one (an
 * arrow's expression body), to the first `,`, `)`, `]` or `}` outside brackets, or the end.
 */
function scan(s: string, i: number, closer: string | undefined): number {
  let regexAllowed = true;
  for (let j = i; ; ) {
    j = skipTrivia(s, j);
    if (j >= s.length) return closer ? -1 : s.length;
    const c = s[j]!;
    if (c === closer) return j + 1;
    if (c === ')' || c === ']' || c === '}' || (c === ',' && !closer)) return closer ? -1 : j;
    let next: number;
    if (c in CLOSER) next = scan(s, j + 1, CLOSER[c]);
    else if (c === '"' || c === "'") next = skipString(s, j);
    else if (c === '`') next = skipTemplate(s, j);
    else if (c === '/' && regexAllowed) next = skipRegex(s, j);
    else {
      const word = /[A-Za-z0-9_$\u0080-\uffff]/.test(c) ? ((WORD.lastIndex = j), WORD.exec(s)![0]) : undefined;
      regexAllowed = word === undefined || BEFORE_REGEX.has(word);
      j += word?.length ?? 1;
      continue;
    }
    if (next < 0) return -1;
    regexAllowed = false;
    j = next;
  }
}

function skipTrivia(s: string, i: number): number {
  for (;;) {
    while (i < s.length && /\s/.test(s[i]!)) i++;
    if (s.startsWith('//', i)) {
      const end = s.indexOf('\n', i);
      i = end < 0 ? s.length : end + 1;
    } else if (s.startsWith('/*', i)) {
      const end = s.indexOf('*/', i + 2);
      i = end < 0 ? s.length : end + 2;
    } else return i;
  }
}

function skipString(s: string, i: number): number {
  for (let j = i + 1; j < s.length; j++) {
    const c = s[j];
    if (c === '\\') j++;
    else if (c === s[i]) return j + 1;
    else if (c === '\n') return -1;
  }
  return -1;
}

function skipTemplate(s: string, i: number): number {
  for (let j = i + 1; j < s.length; j++) {
    const c = s[j];
    if (c === '\\') j++;
    else if (c === '`') return j + 1;
    else if (c === '$' && s[j + 1] === '{') {
      const end = scan(s, j + 2, '}');
      if (end < 0) return -1;
      j = end - 1;
    }
  }
  return -1;
}

function skipRegex(s: string, i: number): number {
  let inClass = false;
  for (let j = i + 1; j < s.length; j++) {
    const c = s[j];
    if (c === '\\') j++;
    else if (c === '\n') return -1;
    else if (c === '[') inClass = true;
    else if (c === ']') inClass = false;
    else if (c === '/' && !inClass) {
      WORD.lastIndex = j + 1;
      const flags = WORD.exec(s);
      return flags && flags.index === j + 1 ? j + 1 + flags[0].length : j + 1;
    }
  }
  return -1;
}
