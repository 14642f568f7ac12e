import { describe, expect, it } from 'vitest';
import { compileWhere } from '../../src/server/data-sources/query/index.js';
import { FilterError } from '../../src/filter/errors.js';
import { foldCase, likeMatcher } from '../../src/filter/like.js';
import { compilePartialFilter } from '../../src/filter/partial.js';
import { compileRegex } from '../../src/filter/regex.js';
import { compileFilter } from '../../src/filter/tester.js';

/** A deterministic generator (mulberry32) so failures reproduce. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const pick = <T>(r: () => number, items: readonly T[]): T => items[Math.floor(r() * items.length)]!;

/** The former regex-based $iLike (a backtracking engine): the reference for the linear matcher. */
function regexLike(pattern: string): (value: string) => boolean {
  const quote = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  if (pattern.includes('%')) {
    const regex = new RegExp(`^${quote(pattern).replace(/%/g, '.*').replace(/_/g, '.')}$`, 'is');
    return (v) => regex.test(v);
  }
  const needle = new RegExp(quote(pattern), 'i');
  return (v) => needle.test(v);
}

describe('the filter module (src/filter/)', () => {
  it('$iLike gives the answers of the former regex on 5,000 generated patterns and texts', () => {
    const r = random(14);
    const alphabet = ['a', 'b', 'A', '%', '_', 'é', 'É', 'ß', '\n', '.', 'ǅ', 'ſ', 'K', 'k', 'İ', 'ı'];
    for (let i = 0; i < 5000; i++) {
      const pattern = Array.from({ length: 1 + Math.floor(r() * 6) }, () => pick(r, alphabet)).join('');
      const text = Array.from({ length: Math.floor(r() * 8) }, () =>
        pick(
          r,
          alphabet.filter((c) => c !== '%'),
        ),
      ).join('');
      expect(likeMatcher(pattern, true)(text), `${JSON.stringify(pattern)} on ${JSON.stringify(text)}`).toBe(regexLike(pattern)(text));
    }
  });

  it('folds case code unit by code unit, as a JavaScript i regex does', () => {
    for (let code = 0; code < 0x10000; code += 7) {
      const c = String.fromCharCode(code);
      if (code >= 0xd800 && code <= 0xdfff) continue;
      const upper = foldCase(c);
      expect(upper.length).toBe(1);
      expect(new RegExp(`^${c.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&')}$`, 'i').test(upper)).toBe(true);
    }
  });

  it('$like is case-sensitive; numbers match as their text; other types never', () => {
    expect(likeMatcher('A%', false)('abc')).toBe(false);
    expect(likeMatcher('a%', false)('abc')).toBe(true);
    expect(likeMatcher('%2.5', false)(12.5)).toBe(true);
    expect(likeMatcher('%', false)(null)).toBe(false);
    expect(likeMatcher('%', false)(['x'])).toBe(false);
  });

  it('RE2 gives the answers of a JavaScript regex for common patterns and flags', () => {
    const texts = ['', 'abc', 'ABC', 'a\nb', 'x1y22z333', 'café', 'foo.bar', 'line1\nline2', 'aaaa!'];
    const patterns: [string, string][] = [
      ['abc', ''],
      ['^abc$', 'i'],
      ['a.b', ''],
      ['a.b', 's'],
      ['^line2$', 'm'],
      ['^line2$', ''],
      ['\\d{2,}', ''],
      ['[a-c]+', ''],
      ['^$', ''],
      ['caf[ée]', ''],
      ['foo\\.bar', ''],
      ['(a|b)c', ''],
      ['\\bbar', ''],
      ['[^a-z]', ''],
      ['(?i)abc', ''],
      ['x(\\d+)y', ''],
      ['(a|a?)+$', ''],
      ['^(a+)+$', ''],
    ];
    for (const [pattern, flags] of patterns) {
      const re2 = compileRegex(pattern, flags, 'p');
      const js = new RegExp(pattern.replace('(?i)', ''), pattern.startsWith('(?i)') ? 'i' : flags);
      for (const text of texts) expect(re2.test(text), `/${pattern}/${flags} on ${JSON.stringify(text)}`).toBe(js.test(text));
    }
  });

  it('refuses with FilterError (code INVALID_QUERY) naming the path', () => {
    const refusals: [() => unknown, RegExp][] = [
      [() => compileFilter({ a: { $where: 'x' } }), /where\.a\.\$where: operator \$where is not allowed/],
      [() => compileFilter({ a: { $regex: '(a)\\1' } }, 'options.where'), /options\.where\.a\.\$regex is not a valid regular expression \(RE2 syntax/],
      [() => compilePartialFilter({ data: { a: { $regex: '(?!x)' } } }, 'triggers[0].where'), /triggers\[0\]\.where\.data\.a\.\$regex/],
      [() => compileFilter({ a: { $like: {} } }), /\$like must be a string/],
      [() => compileFilter({ a: { $iLike: 'x'.repeat(257) } }), /longer than 256/],
      [() => compileFilter({ a: { $bogus: 1 } }), /operator \$bogus is not allowed/],
    ];
    for (const [fn, message] of refusals) {
      let error: unknown;
      try {
        fn();
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(FilterError);
      expect((error as FilterError).code).toBe('INVALID_QUERY');
      expect((error as Error).message).toMatch(message);
    }
  });

  it('one input, one answer: the data source, getLogs, notification and trigger paths agree', () => {
    const docs: Record<string, unknown>[] = [
      { name: 'Ada', n: 3, tags: ['x', 'y'], nested: { k: 'v' } },
      { name: 'bob', n: '3', tags: [], nested: { k: 'w' } },
      { name: null, n: 4.5 },
      { n: [1, 2, 3], name: 'aaaa!' },
      {},
    ];
    const filters: Record<string, unknown>[] = [
      { name: { $regex: '^a' } },
      { name: { $regex: '^a', $options: 'i' } },
      { name: { $iLike: 'A%' } },
      { name: { $like: '%b' } },
      { name: { $iLike: 'D' } },
      { n: { $gt: 3 } },
      { n: { $in: [3, '3'] } },
      { n: 2 },
      { tags: 'x' },
      { tags: { $size: 0 } },
      { 'nested.k': { $ne: 'v' } },
      { name: { $exists: false } },
      { name: null },
      { $or: [{ n: 3 }, { name: { $regex: '(a|a?)+$' } }] },
      { name: { $not: { $regex: 'b' } } },
      { n: { $mod: [2, 0] } },
      { n: { $type: 'string' } },
      { tags: { $all: ['x', 'y'] } },
      { n: { $elemMatch: { $gte: 3 } } },
      { $nor: [{ n: 3 }] },
    ];
    for (const filter of filters) {
      const server = compileWhere(filter);
      const logs = compileFilter(filter);
      const partial = compilePartialFilter(filter);
      for (const doc of docs) {
        const expected = logs(doc);
        const label = `${JSON.stringify(filter)} on ${JSON.stringify(doc)}`;
        expect(server({ id: 1, data: doc, order: 1, createdAt: '', updatedAt: '' } as never), label).toBe(expected);
        expect(partial(doc), label).toBe(expected);
      }
    }
  });
});
