/**
 * JS's full `toLowerCase()` as a PostgreSQL regular expression, for the `$filters` operands whose case folding
 * SQL's `lower()` cannot reproduce (sql/filters.ts: `é`, `ß`, `ǅ`, Greek, Cyrillic…). `lower(text) = needle` (or
 * holds it) exactly when `text` matches the needle with each character replaced by the class of every character
 * JS lowercases to it. The classes are read from this process's own `toLowerCase()`, the one the JS evaluator
 * uses, so both answer from the same Unicode tables.
 *
 * `toLowerCase()` maps one code point to one code point, with two exceptions, both handled or refused here:
 * - U+0130 (İ) lowercases to `i` + U+0307: an alternative wherever the needle has that pair, and in a `contains`
 *   needle also at its ends (a needle ending in `i`, or starting with U+0307, can meet half of it);
 * - Σ lowercases to ς at the end of a word and to σ elsewhere (Final_Sigma): a needle holding σ or ς is refused.
 * If this runtime's tables hold any other multi-character lowercase, every caseful needle is refused.
 */

const I = 0x69;
const DOT = 0x307;
const DOTTED_I = 0x130;

/** Code points, by the lowercase they have alone (itself first); null when the tables hold an unknown expansion. */
let preimages: Map<number, number[]> | null | undefined;

function table(): Map<number, number[]> | null {
  if (preimages !== undefined) return preimages;
  const map = new Map<number, number[]>();
  let known = true;
  // By blocks of 1,024 code points: a block its own lowercase is skipped whole (about 50 ms in all, once).
  for (let base = 0; base <= 0x10ffff; base += 1024) {
    const cps: number[] = [];
    for (let cp = base; cp < base + 1024; cp++) if (cp < 0xd800 || cp > 0xdfff) cps.push(cp);
    const block = String.fromCodePoint(...cps);
    if (block.toLowerCase() === block) continue;
    for (const cp of cps) {
      const c = String.fromCodePoint(cp);
      const lower = c.toLowerCase();
      if (lower === c) continue;
      const out = [...lower];
      if (out.length !== 1) {
        if (cp !== DOTTED_I || lower !== 'i\u0307') known = false;
        continue;
      }
      const to = out[0]!.codePointAt(0)!;
      const list = map.get(to) ?? [to];
      list.push(cp);
      map.set(to, list);
    }
  }
  preimages = known ? map : null;
  return preimages;
}

const esc = (cp: number) => (cp <= 0xffff ? `\\u${cp.toString(16).padStart(4, '0')}` : `\\U${cp.toString(16).padStart(8, '0')}`);

/** The longest caseful operand translated (in UTF-16 units): its pattern is about 15 times as long. */
export const MAX_CASEFUL_LENGTH = 256;

/**
 * A needle (already lowercased) whose full case folding this module reproduces: no NUL (PostgreSQL text), no lone
 * surrogate, no U+FFFD (SQLite hands a function invalid UTF-8 as U+FFFD), no σ or ς (Final_Sigma), and at most
 * MAX_CASEFUL_LENGTH long.
 */
export function casefulNeedle(needle: string): boolean {
  if (needle.length > MAX_CASEFUL_LENGTH || table() === null) return false;
  for (const c of needle) {
    const cp = c.codePointAt(0)!;
    if (cp === 0 || (cp >= 0xd800 && cp <= 0xdfff) || cp === 0xfffd || c === 'σ' || c === 'ς') return false;
    // A lowercased needle: each of its characters is its own lowercase.
    if (c.toLowerCase() !== c) return false;
  }
  return true;
}

/**
 * The body of a regular expression (PostgreSQL ARE) matching the texts whose `toLowerCase()` is `needle`
 * (`whole`) or holds it; every character written as an escape. `needle` must pass `casefulNeedle`.
 */
export function casefulPattern(needle: string, whole: boolean): string {
  const map = table()!;
  const cps = [...needle].map((c) => c.codePointAt(0)!);
  const cls = (cp: number) => `[${(map.get(cp) ?? [cp]).map(esc).join('')}]`;
  let out = '';
  for (let i = 0; i < cps.length; i++) {
    const cp = cps[i]!;
    if (cp === I && cps[i + 1] === DOT) {
      out += `(?:${cls(I)}${esc(DOT)}|${esc(DOTTED_I)})`;
      i++;
    } else if (!whole && cp === I && i === cps.length - 1) out += `(?:${cls(I)}|${esc(DOTTED_I)})`;
    else if (!whole && cp === DOT && i === 0) out += `(?:${esc(DOT)}|${esc(DOTTED_I)})`;
    else out += cls(cp);
  }
  return out;
}
