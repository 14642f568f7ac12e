/**
 * Compiles JavaScript in a fresh QuickJS context without running it (`compileOnly`): the backend checks
 * stored custom function code with it, so a syntax error is refused when the code is stored, not when a
 * run first uses it. Nothing of the checked code ever runs, in the sandbox or in the host.
 */
import { acquireModule, releaseModule } from './pool.js';

/** Where a text failed to compile, in the checked source's own lines and columns (1-based). */
export interface SyntaxProblem {
  errorType: string;
  message: string;
  line: number;
  column: number;
}

/**
 * Compiles `prefix + source + suffix` as a script; undefined when it compiles. `prefix` must be one line
 * (positions are reported in `source`; a position in the suffix is reported as the end of `source`).
 */
export type CompileCheck = (source: string, prefix?: string, suffix?: string) => SyntaxProblem | undefined;

/** The same memory and stack as a default pipeline run, so code that compiles here compiles in runs. */
const MEMORY_BYTES = 128 * 1024 * 1024;
const STACK_BYTES = 128 * 1024;

export async function withCompileCheck<T>(use: (check: CompileCheck) => T): Promise<T> {
  const module = await acquireModule(MEMORY_BYTES);
  const runtime = module.quickjs.newRuntime();
  runtime.setMemoryLimit(MEMORY_BYTES);
  runtime.setMaxStackSize(STACK_BYTES);
  const vm = runtime.newContext();
  try {
    return use((source, prefix = '', suffix = '') => {
      const result = vm.evalCode(prefix + source + suffix, 'code.js', { type: 'global', compileOnly: true });
      if (!result.error) {
        result.value.dispose();
        return undefined;
      }
      const raw = vm.dump(result.error) as { name?: unknown; message?: unknown; stack?: unknown; lineNumber?: unknown } | null;
      result.error.dispose();
      return locate(source, prefix, raw);
    });
  } finally {
    vm.dispose();
    runtime.dispose();
    releaseModule(module);
  }
}

function locate(source: string, prefix: string, raw: { name?: unknown; message?: unknown; stack?: unknown; lineNumber?: unknown } | null): SyntaxProblem {
  const at = typeof raw?.stack === 'string' ? /code\.js:(\d+):(\d+)/.exec(raw.stack) : null;
  let line = at ? Number(at[1]) : typeof raw?.lineNumber === 'number' ? raw.lineNumber : 1;
  let column = at ? Number(at[2]) : 1;
  if (line === 1) column = Math.max(1, column - prefix.length);
  const lines = source.split('\n');
  if (line > lines.length) {
    line = lines.length;
    column = lines[lines.length - 1]!.length + 1;
  }
  const errorType = typeof raw?.name === 'string' ? raw.name : 'SyntaxError';
  const message = typeof raw?.message === 'string' ? raw.message.slice(0, 300) : String(raw).slice(0, 300);
  return { errorType, message, line, column };
}
