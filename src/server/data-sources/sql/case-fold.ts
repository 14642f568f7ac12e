/**
 * JS's full `toLowerCase()` on PostgreSQL, for the `$filters` operands whose case folding SQL's `lower()` cannot
 * reproduce (sql/filters.ts: `é`, `ß`, `ǅ`, Greek, Cyrillic…): `translate()` maps each character that JS
 * lowercases to one of the operand's characters to that character. The map is read from this process's own
 * `toLowerCase()`, the one the JS evaluator uses, so both answer from the same Unicode tables.
 *
 * `toLowerCase()` maps one code point to one code point, with two exceptions, both handled or refused here:
 * - U+0130 (İ) lowercases to `i` + U+0307: replaced in the text before `translate()`;
 * - Σ lowercases to ς at the end of a word and to σ elsewhere (Final_Sigma): a needle holding σ or ς is refused.
 * If this runtime's tables hold any other multi-character lowercase, every caseful needle is refused.
 */

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

/** The longest caseful operand translated (in UTF-16 units). */
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
 * What PostgreSQL's `translate()` needs to lowercase, as JS does, every character that can meet one of `needles`
 * (lowercased, each passing `casefulNeedle`): every other character that JS lowercases to a character of theirs
 * (`from`), and that character (`to`, in the same order). U+0130 is left out: the text's İ is replaced by `i` +
 * U+0307 first (postgres-filters.ts). A character left as it is then meets a needle's character only when it is
 * that character, which is its own lowercase: so the text holds (or is) a needle after this exactly when its
 * `toLowerCase()` does.
 */
export function casefulMap(needles: readonly string[]): { from: string; to: string } {
  const map = table()!;
  let from = '';
  let to = '';
  const seen = new Set<number>();
  for (const needle of needles)
    for (const c of needle) {
      const cp = c.codePointAt(0)!;
      if (seen.has(cp)) continue;
      seen.add(cp);
      for (const p of map.get(cp) ?? []) {
        if (p === cp) continue;
        from += String.fromCodePoint(p);
        to += c;
      }
    }
  return { from, to };
}
