/**
 * User regular expressions (`$regex`, and `$regexMatch`/`$regexFind`/`$regexFindAll` in aggregates) run on
 * RE2 (re2js, a pure-JS port): matching time is linear in the text for every pattern, on the server and on
 * the device alike. Patterns use RE2 syntax, i.e. JavaScript's without backreferences and lookaround, which
 * are refused with a message saying so. Bounds: at most MAX_PATTERN_LENGTH characters, flags among `imsu`,
 * and a compiled program of at most MAX_PROGRAM_SIZE instructions (the cost per character of text).
 */
import { RE2JS } from 're2js';
import { FilterError } from './errors.js';

export const MAX_PATTERN_LENGTH = 256;
/** RE2 instructions of a compiled pattern; `[\s\S]{1000}` has about 1,000, `^\d{4}-\d{2}-\d{2}$` 17. */
export const MAX_PROGRAM_SIZE = 500;
const FLAGS = /^[imsu]*$/;
const META = /[\\^$.|?*+()[\]{}]/;

/** A compiled pattern: `test` says whether it matches somewhere in the text. */
export interface LinearRegex {
  test(text: string): boolean;
  /** Every match from the left, without overlaps (at most `limit`), with its UTF-16 index and groups. */
  exec(text: string, limit: number): { match: string; index: number; captures: (string | null)[] }[];
}

function flagBits(flags: string): number {
  let bits = 0;
  if (flags.includes('i')) bits |= RE2JS.CASE_INSENSITIVE;
  if (flags.includes('s')) bits |= RE2JS.DOTALL;
  if (flags.includes('m')) bits |= RE2JS.MULTILINE;
  return bits;
}

function withRe2(re: RE2JS): LinearRegex {
  return {
    test: (text) => re.test(text),
    exec(text, limit) {
      const out: { match: string; index: number; captures: (string | null)[] }[] = [];
      const matcher = re.matcher(text);
      const groups = re.groupCount();
      while (out.length < limit && matcher.find()) {
        const captures: (string | null)[] = [];
        for (let g = 1; g <= groups; g++) captures.push(matcher.group(g) ?? null);
        out.push({ match: matcher.group(0) ?? '', index: matcher.start(), captures });
      }
      return out;
    },
  };
}

/** A literal without metacharacters or flags that matter: a plain substring search. */
function literal(pattern: string): LinearRegex {
  return {
    test: (text) => text.includes(pattern),
    exec(text, limit) {
      const out: { match: string; index: number; captures: (string | null)[] }[] = [];
      let from = 0;
      while (out.length < limit) {
        const index = text.indexOf(pattern, from);
        if (index < 0) break;
        out.push({ match: pattern, index, captures: [] });
        from = index + Math.max(pattern.length, 1);
      }
      return out;
    },
  };
}

/**
 * Checks and compiles a user pattern; throws FilterError naming `path` when it is not a string, too long,
 * has other flags than `imsu`, is not valid RE2 syntax or compiles to too big a program.
 */
export function compileRegex(pattern: unknown, flags: unknown, path: string): LinearRegex {
  if (typeof pattern !== 'string') throw new FilterError(`${path} must be a string`);
  if (pattern.length > MAX_PATTERN_LENGTH) throw new FilterError(`${path} is longer than ${MAX_PATTERN_LENGTH} characters`);
  if (flags !== undefined && flags !== null && (typeof flags !== 'string' || !FLAGS.test(flags))) {
    throw new FilterError(`${path}: the options must only hold the flags i, m, s, u`);
  }
  const f = typeof flags === 'string' ? flags : '';
  if (!META.test(pattern) && !f.includes('i') && pattern !== '') return literal(pattern);
  let re: RE2JS;
  try {
    re = RE2JS.compile(pattern, flagBits(f));
  } catch (error) {
    throw new FilterError(`${path} is not a valid regular expression (RE2 syntax: no backreferences or lookaround): ${(error as Error).message}`);
  }
  if (re.programSize() > MAX_PROGRAM_SIZE) {
    throw new FilterError(`${path} is too complex (${re.programSize()} RE2 instructions, at most ${MAX_PROGRAM_SIZE})`);
  }
  return withRe2(re);
}
