/**
 * What hosts need to know about the custom function packages a pipeline uses before it runs: which
 * packages (so the device fetches backend functions only when needed) and where each is first used
 * (so a function stored for the other side fails with its node path before anything runs).
 */
import type { FunctionPackageSource, PipelineNode, RunOutcome } from '../contract/pipeline.js';
import { isBuiltin, type FunctionEnvironment } from './catalog.js';

/** A custom function as a host holds it: its code (absent when this side may not have it) and where it may run. */
export interface CustomFunctionSource extends FunctionPackageSource {
  environment?: FunctionEnvironment;
}

/** Each non-built-in package the pipeline names, with the path of its first node (`functions[1].functions[0]`). */
export function customPackageUses(nodes: unknown): Map<string, string> {
  const uses = new Map<string, string>();
  const walk = (list: unknown, base: string) => {
    if (!Array.isArray(list)) return;
    list.forEach((raw, i) => {
      if (raw === null || typeof raw !== 'object') return;
      const node = raw as PipelineNode;
      const path = `${base}[${i}]`;
      if (node.type === 'loop') walk(node.functions, `${path}.functions`);
      else if (node.type === 'if') {
        if (Array.isArray(node.conditions))
          node.conditions.forEach((c, k) => walk((c as { functions?: unknown } | null)?.functions, `${path}.conditions[${k}].functions`));
        walk(node.elseFunctions, `${path}.elseFunctions`);
      } else {
        const pkg = (node as { functionPackage?: unknown }).functionPackage;
        if (typeof pkg === 'string' && !isBuiltin(pkg) && !uses.has(pkg)) uses.set(pkg, path);
        walk(node.functions, `${path}.functions`);
      }
    });
  };
  walk(nodes, 'functions');
  return uses;
}

/**
 * The custom functions a run on `side` gets (later lists win for the same package), or the failure of the
 * first node that uses a function stored for the other side (`FUNCTION_UNAVAILABLE`, like a server-only
 * built-in on the device). Unknown packages are left to the engine (`UNKNOWN_FUNCTION`).
 */
export function customFunctionsForRun(
  nodes: unknown,
  side: 'server' | 'client',
  ...lists: readonly CustomFunctionSource[][]
): { ok: true; customFunctions: FunctionPackageSource[] } | { ok: false; outcome: RunOutcome } {
  const byPackage = new Map<string, CustomFunctionSource>();
  for (const list of lists) for (const f of list) byPackage.set(f.package, f);
  for (const [pkg, path] of customPackageUses(nodes)) {
    const fn = byPackage.get(pkg);
    if (!fn) continue;
    const env = fn.environment ?? 'any';
    if ((env !== 'any' && env !== side) || typeof fn.code !== 'string') {
      const where = env === 'server' ? 'on the server only' : 'on the device only';
      const errorMessage = `${path}: custom function ${pkg} runs ${where} (environment ${env}); this run is on the ${side === 'server' ? 'server' : 'device'}`;
      const error = { errorType: 'ValidationError', code: 'FUNCTION_UNAVAILABLE', errorMessage, trace: [] };
      return { ok: false, outcome: { ok: false, error, trace: [], durationMs: 0 } };
    }
  }
  const customFunctions: FunctionPackageSource[] = [];
  for (const f of byPackage.values()) {
    const env = f.environment ?? 'any';
    if (typeof f.code === 'string' && (env === 'any' || env === side))
      customFunctions.push({ package: f.package, name: f.name, description: f.description, code: f.code });
  }
  return { ok: true, customFunctions };
}
