/**
 * The check of custom function code when the backend stores it (`POST v1/apps/:appId/tasks/functions`):
 * the code must compile in QuickJS and be one function expression, `(settings, context) => …`, since runs
 * evaluate it as `return (code)` and call what it evaluates to. Compiled only, never run.
 */
import { withCompileCheck, type SyntaxProblem } from '../sandbox/syntax.js';
import { shapeOf } from './code-shape.js';

export interface CodeProblem {
  message: string;
  line: number;
  column: number;
}

const EXPECTED = 'a stored function must be one function expression, such as (settings, context) => { … } or async function (settings, context) { … }';
/** How script nodes compile their code: the body of an async function. */
const BODY_PREFIX = '(async function (settings, context, Client, currentItem, currentIndex) {';

/** Undefined when `code` is a function expression that compiles; otherwise what is wrong and where. */
export function checkFunctionCode(code: string): Promise<CodeProblem | undefined> {
  return withCompileCheck((compile) => {
    const asExpression = compile(code, '(', '\n)');
    if (asExpression) {
      const shape = shapeOf(code);
      // Code that does not start like a function: most likely a script node's body; its own errors say more.
      if (shape.kind === 'other' && shape.prefix === undefined) {
        const asBody = compile(code, BODY_PREFIX, '\n})');
        if (!asBody) return { message: `the code is a function body (what a script node takes), not a function: ${EXPECTED}`, line: 1, column: 1 };
        return syntaxProblem(asBody);
      }
      return syntaxProblem(asExpression);
    }
    const shape = shapeOf(code);
    // Code after the function counts only when the function alone compiles (the scanner may have guessed wrong).
    if (shape.kind !== 'other' || (shape.prefix !== undefined && compile(shape.prefix, '(', '\n)'))) return undefined;
    const { line, column } = position(code, shape.at);
    const what = shape.prefix === undefined ? 'is not a function expression' : 'is code after the function';
    return { message: `line ${line}, column ${column} ${what}: ${EXPECTED}`, line, column };
  });
}

function syntaxProblem({ errorType, message, line, column }: SyntaxProblem): CodeProblem {
  return { message: `${errorType} at line ${line}, column ${column}: ${message}`, line, column };
}

function position(code: string, at: number): { line: number; column: number } {
  const before = code.slice(0, at).split('\n');
  return { line: before.length, column: before[before.length - 1]!.length + 1 };
}
