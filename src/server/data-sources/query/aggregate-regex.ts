/**
 * The regular expression operators of aggregates on RE2 (src/filter/regex.ts) instead of mingo's native
 * RegExp: `$regex` in `$match`, and the `$regexMatch` / `$regexFind` / `$regexFindAll` expressions. The
 * pattern may come from the pipeline or from the data (`regex: '$data.pattern'`): either way it is checked
 * and compiled here, where it is used, so no pattern reaches a backtracking engine.
 */
import { evalExpr } from 'mingo/core';
import * as queries from 'mingo/operators/query';
import type { Options } from 'mingo/types';
import { compileRegex, type LinearRegex } from '../../../filter/regex.js';

const cache = new Map<string, LinearRegex>();

/** Compiles (once per pattern and flags: a small cache) or throws FilterError, which becomes a 400. */
function linear(pattern: unknown, flags: unknown, path: string): LinearRegex {
  const key = `${typeof flags === 'string' ? flags : ''}/${String(pattern)}`;
  let regex = typeof pattern === 'string' ? cache.get(key) : undefined;
  if (!regex) {
    regex = compileRegex(pattern, flags, path);
    cache.set(key, regex);
    if (cache.size > 256) cache.delete(cache.keys().next().value!);
  }
  return regex;
}

type Found = { match: string; idx: number; captures: (string | null)[] };

function search(obj: unknown, expr: unknown, options: Options, name: string, limit: number): Found[] {
  const args = evalExpr(obj as never, expr as never, options) as { input?: unknown; regex?: unknown; options?: unknown } | null;
  if (!args || typeof args !== 'object') throw new Error(`${name} needs an object { input, regex, options? }`);
  if (typeof args.input !== 'string') return [];
  const pattern = args.regex instanceof RegExp ? args.regex.source : args.regex;
  const flags = args.regex instanceof RegExp ? args.regex.flags || args.options : args.options;
  const regex = linear(pattern, flags, `${name}.regex`);
  return regex.exec(args.input, limit).map((m) => ({ match: m.match, idx: m.index, captures: m.captures }));
}

export const $regexMatch = (obj: unknown, expr: unknown, options: Options): boolean => search(obj, expr, options, '$regexMatch', 1).length > 0;
export const $regexFind = (obj: unknown, expr: unknown, options: Options): Found | null => search(obj, expr, options, '$regexFind', 1)[0] ?? null;
export const $regexFindAll = (obj: unknown, expr: unknown, options: Options): Found[] => search(obj, expr, options, '$regexFindAll', Number.MAX_SAFE_INTEGER);

/** `$regex` of `$match`: mingo turns `{ $regex, $options }` into a RegExp (never run); RE2 matches it. */
export const $regex = (selector: string, value: unknown, options: Options): ((obj: unknown) => boolean) => {
  const pattern = value instanceof RegExp ? value.source : value;
  const flags = value instanceof RegExp ? value.flags : undefined;
  const regex = linear(pattern, flags, '$regex');
  const execLike = { exec: (text: string) => (regex.test(text) ? [text] : null) };
  return (queries.$regex as unknown as (s: string, v: unknown, o: Options) => (obj: unknown) => boolean)(selector, execLike, options);
};

/**
 * A `$dateFromString` format's literal text goes into a RegExp, mingo quoting only the first `^ . - * ? $` of each
 * run of it. Quantifiers and anchors (`* ? ^ $`) are refused there; group, class, brace, alternation, plus and
 * backslash characters are quoted here (mingo leaves those alone), so `(%H:%M) %d.%m.%Y` parses. (mingo drops the
 * text after the last specifier, so `%d.%m.%Y (%H:%M)` never matches its `)`; and a second `.` in one run of text
 * stays a wildcard: mingo's, linear.)
 */
const FORMAT_REFUSED = /[*?^$]/;
const FORMAT_QUOTED = /[\\()[\]{}|+]/g;
/** Specifiers mingo reads into one RegExp, some of variable width (`%U`, `%z`): more would backtrack exponentially. */
const MAX_FORMAT_SPECIFIERS = 12;
const SPECIFIER = /%[bBYGmdjHMSLwuUVzZ%]/g;

/**
 * `$dateFromString` with its format checked first: mingo checks the date against a RegExp (V8's, backtracking)
 * built from the format, so a format such as `(a+)+x%Y %m %d` (from the pipeline or from the data) ran for hours on
 * one request. Its literal text is quoted (FORMAT_QUOTED) or refused (FORMAT_REFUSED: 400), and so is a format with
 * more than MAX_FORMAT_SPECIFIERS specifiers; the rest is mingo's own operator.
 */
export function safeDateFromString(op: (obj: unknown, expr: unknown, options: Options) => unknown) {
  return (obj: unknown, expr: unknown, options: Options): unknown => {
    const args = evalExpr(obj as never, expr as never, options) as Record<string, unknown> | null;
    if (!args || typeof args !== 'object' || Array.isArray(args)) throw new Error('$dateFromString needs an object { dateString, format?, … }');
    const { format } = args;
    if (format !== undefined && format !== null) {
      if (typeof format !== 'string') throw new Error('$dateFromString.format must be a string');
      const specifiers = format.match(SPECIFIER)?.length ?? 0;
      // mingo fails on a format without one ("Cannot read properties of null").
      if (specifiers === 0) throw new Error('$dateFromString.format must hold specifiers such as %Y, %m and %d');
      if (FORMAT_REFUSED.test(format.replace(SPECIFIER, '')) || specifiers > MAX_FORMAT_SPECIFIERS)
        throw new Error(`$dateFromString.format may hold at most ${MAX_FORMAT_SPECIFIERS} specifiers and none of * ? ^ $ in its text`);
    }
    // Evaluated once: mingo gets the values as literals, the format's text quoted.
    const quoted = typeof format === 'string' ? { ...args, format: format.replace(FORMAT_QUOTED, '\\$&') } : args;
    const literal = Object.fromEntries(Object.entries(quoted).map(([key, value]) => [key, { $literal: value }]));
    return op(obj, literal, options);
  };
}
