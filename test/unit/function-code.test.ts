// @vitest-environment node
import { describe, expect, it } from 'vitest';
import { checkFunctionCode } from '../../src/functions/check-code.js';

const functions = [
  '(settings, context) => ({ total: settings.a + context.b })',
  'async (settings) => { await null; return 1 }',
  'settings => settings.x',
  'async settings => settings.x',
  'function (settings) { return 1 }',
  'async function named(settings, context) {\n  return { ok: true };\n}',
  'function* gen() { yield 1 }',
  '(function (s) { return s })',
  '  /* a comment */ ((s) => s) // trailing\n',
  '(s, c) => {\n  const re = /[}{)(]/g, t = `${s.a + "}"}`;\n  if (s.a) /x}/.test(t);\n  return { t, o: { a: [1, 2] } };\n}',
  '(s = { a: [1, (2)] }, { b } = {}) => s.a[1] / 2 / 1',
  'x => y => x + y',
  '(s) => s.a ? { v: 1 } : (() => 2)()',
];

describe('checkFunctionCode (compiled in QuickJS, never run)', () => {
  it.each(functions)('accepts the function expression %j', async (code) => {
    expect(await checkFunctionCode(code)).toBeUndefined();
  });

  it('refuses a syntax error with its line and column', async () => {
    expect(await checkFunctionCode('async (s, c) => {\n  const x = ;\n}')).toEqual({
      message: "SyntaxError at line 2, column 13: unexpected token in expression: ';'",
      line: 2,
      column: 13,
    });
    expect(await checkFunctionCode('(s) => {\n  return 1')).toMatchObject({ line: 2 });
    expect(await checkFunctionCode('function (s) { return 1 }}')).toMatchObject({ line: 1, column: 26 });
  });

  it('refuses a plain body (what a script node takes), and a plain body with a syntax error names its line', async () => {
    const body = await checkFunctionCode('const total = settings.values.reduce((a, v) => a + v, 0);\nreturn { total };');
    expect(body?.message).toContain('function body (what a script node takes)');
    expect(body?.message).toContain('(settings, context) => { … }');
    expect(await checkFunctionCode('return {};')).toMatchObject({ message: expect.stringContaining('function body'), line: 1 });
    expect(await checkFunctionCode('const a = 1;\nreturn a +;')).toMatchObject({ message: expect.stringContaining('SyntaxError at line 2'), line: 2 });
  });

  it.each([
    ['settings.a + 1', 1, 1],
    ['1', 1, 1],
    ['({ run: (s) => s })', 1, 2],
    ['new Function("return 1")', 1, 1],
    ['class { }', 1, 1],
    ['function () { return 1 }()', 1, 25],
    ['(function () { return 1 })()', 1, 27],
    ['(s) => s,\n(t) => t', 1, 9],
    ['async function () {}.call(null)', 1, 21],
    ['(() => 1, 2)', 1, 9],
  ])('refuses %j, which is not one function expression (line %i, column %i)', async (code, line, column) => {
    const problem = await checkFunctionCode(code);
    expect(problem).toMatchObject({ line, column, message: expect.stringContaining('a stored function must be one function expression') });
  });
});
