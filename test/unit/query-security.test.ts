import sift from 'sift';
import { afterEach, describe, expect, it } from 'vitest';
import { HttpError } from '../../src/server/http/errors.js';
import { MAX_REGEX_LENGTH, compileWhere, runQuery, validateQuery, type EntryRecord } from '../../src/server/data-sources/query/index.js';

const g = globalThis as { __queryPwned?: boolean };
const SET_FLAG = 'globalThis.__queryPwned = true';
const entries: EntryRecord[] = [1, 2].map((id) => ({
  id,
  dataSourceId: 1,
  data: { name: `n${id}`, tags: [{ a: 1 }] },
  order: 0,
  createdAt: '2024-01-01T00:00:00.000Z',
  updatedAt: '2024-01-01T00:00:00.000Z',
}));
const noJoins = { load: async () => [] as EntryRecord[] };

function expect400(fn: () => unknown, message?: RegExp) {
  let error: unknown;
  try {
    fn();
  } catch (e) {
    error = e;
  }
  expect(error).toBeInstanceOf(HttpError);
  expect((error as HttpError).status).toBe(400);
  expect((error as HttpError).code).toBe('INVALID_QUERY');
  if (message) expect((error as HttpError).message).toMatch(message);
}

async function expect400Async(promise: Promise<unknown>, message?: RegExp) {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(HttpError);
  expect((error as HttpError).status).toBe(400);
  if (message) expect((error as HttpError).message).toMatch(message);
}

afterEach(() => {
  delete g.__queryPwned;
});

describe('code-running operators are refused before anything runs', () => {
  it('the $where payload really runs code in default sift (so the checks below are meaningful)', () => {
    sift({ $where: SET_FLAG } as never)({});
    expect(g.__queryPwned).toBe(true);
  });

  it.each([
    ['top level', { $where: SET_FLAG }],
    ['inside $or', { $or: [{ name: 'n1' }, { $where: SET_FLAG }] }],
    ['on a column', { name: { $where: SET_FLAG } }],
    ['inside $elemMatch', { tags: { $elemMatch: { $where: SET_FLAG } } }],
    ['inside $not', { name: { $not: { $where: SET_FLAG } } }],
  ])('$where %s: 400 and no code runs', async (_label, where) => {
    expect400(() => compileWhere(where), /\$where is not allowed/);
    await expect400Async(runQuery(entries, { type: 'select', where }, noJoins));
    expect(g.__queryPwned).toBeUndefined();
  });

  it('unknown operators are refused, naming the field', () => {
    expect400(() => compileWhere({ name: { $foo: 1 } }), /where\.name\.\$foo/);
    expect400(() => compileWhere({ $expr: { $eq: ['$a', 1] } }), /\$expr is not allowed/);
    expect400(() => compileWhere({ $text: { $search: 'x' } }));
  });

  it('aggregate refuses $function, $accumulator, $where, $lookup and unknown stages; no code runs', async () => {
    const pipelines: [object[], RegExp][] = [
      [[{ $addFields: { x: { $function: { body: `function () { ${SET_FLAG} }`, args: [], lang: 'js' } } } }], /\$function is not allowed/],
      [
        [
          {
            $group: {
              _id: null,
              x: { $accumulator: { init: `function () { ${SET_FLAG} }`, accumulate: 'function(){}', accumulateArgs: [], merge: 'function(){}', lang: 'js' } },
            },
          },
        ],
        /\$accumulator is not allowed/,
      ],
      [[{ $match: { $where: SET_FLAG } }], /\$where is not allowed/],
      [[{ $lookup: { from: 'other', localField: 'id', foreignField: 'id', as: 'x' } }], /stage \$lookup is not allowed/],
      [[{ $out: 'x' }], /stage \$out is not allowed/],
      [[{ $project: { x: { $range: [0, 1e9] } } }], /\$range is not allowed/],
      [[{ $project: { x: { $nosuchop: 1 } } }], /aggregate\[0\]\.\$project\.x\.\$nosuchop: unknown/],
    ];
    for (const [aggregate, message] of pipelines) {
      expect400(() => validateQuery({ type: 'select', aggregate }), message);
      await expect400Async(runQuery(entries, { type: 'select', aggregate }, noJoins), message);
    }
    expect(g.__queryPwned).toBeUndefined();
  });

  it('bounds $regex: length, flags, RE2 syntax (no backreferences or lookaround), program size', () => {
    expect400(() => compileWhere({ name: { $regex: 'a'.repeat(MAX_REGEX_LENGTH + 1) } }), /longer than/);
    expect(() => compileWhere({ name: { $regex: 'a'.repeat(MAX_REGEX_LENGTH) } })).not.toThrow();
    expect400(() => compileWhere({ name: { $regex: '(' } }), /not a valid regular expression/);
    expect400(() => compileWhere({ name: { $regex: '(a)\\1' } }), /RE2 syntax: no backreferences or lookaround/);
    expect400(() => compileWhere({ name: { $regex: '(?=a)b' } }), /RE2 syntax/);
    expect400(() => compileWhere({ name: { $regex: '[\\s\\S]{1000}' } }), /too complex/);
    expect400(() => compileWhere({ name: { $regex: 'a', $options: 'g' } }), /flags/);
    expect400(() => compileWhere({ name: { $regex: 5 } }), /must be a string/);
    expect400(() => validateQuery({ aggregate: [{ $match: { name: { $regex: '(a)\\1' } } }] }), /RE2 syntax/);
    expect400(() => validateQuery({ aggregate: [{ $project: { x: { $regexMatch: { input: '$data.name', regex: '(?<=x)y' } } } }] }), /RE2 syntax/);
  });

  it('matches catastrophic-backtracking patterns in linear time (RE2), with the answers of a regex', () => {
    const evil = [{ id: 1, data: { name: `${'a'.repeat(5000)}!` }, order: 1, createdAt: '', updatedAt: '' }] as unknown as EntryRecord[];
    const cases: [string, boolean][] = [
      ['(a|a?)+$', true],
      ['^(a+)+$', false],
      ['([a-z]*)*$', true],
      ['(a|aa)+b', false],
    ];
    for (const [pattern, expected] of cases) {
      expect(new RegExp(pattern).test('aaaa!')).toBe(expected); // a native regex agrees on a short text
      expect(compileWhere({ name: { $regex: pattern } })(evil[0]!)).toBe(expected);
    }
    expect(compileWhere({ name: { $regex: '^A+!$', $options: 'i' } })(evil[0]!)).toBe(true);
  });

  it('malformed operator arguments are 400, never a crash while matching', async () => {
    expect400(() => compileWhere({ name: { $in: 'x' } }), /\$in must be an array/);
    expect400(() => compileWhere({ $or: [] }), /non-empty array/);
    expect400(() => compileWhere({ age: { $mod: [0, 1] } }), /\$mod/);
    expect400(() => compileWhere({ age: { $type: 'constructor' } }), /\$type/);
    expect400(() => compileWhere({ tags: { $elemMatch: 3 } }), /\$elemMatch must be an object/);
    expect400(() => compileWhere({ tags: { $size: 'x' } }), /\$size must be a number/);
    expect400(() => compileWhere({ name: { $iLike: { a: 1 } } }), /\$iLike must be a string/);
    expect400(() => compileWhere('name = 1'), /where must be an object/);
  });

  it('$filters never read inherited properties', () => {
    expect(entries.filter(compileWhere({ $filters: [{ column: 'toString', condition: 'notempty' }] }))).toEqual([]);
  });
});
