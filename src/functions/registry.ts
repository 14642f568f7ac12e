import type { ClientContext } from '../core/context.js';
import { ClientError } from '../http/errors.js';
import type { FunctionPackageSource } from '../contract/pipeline.js';
import { BUILTIN_PREFIX, PACKAGE_PATTERN, type FunctionDescriptor } from './catalog.js';

/** A function registered on this device (runs only inside the sandbox, from its source text). */
export interface RegisteredFunction extends FunctionPackageSource {
  /** Negative: device-local ids never clash with the backend's. */
  id: number;
  name: string;
  description: string;
}

let nextId = -1;

export type RegisterInput = ((settings: any, context: any) => unknown) | { name?: string; description?: string; code: string };

/** Checks and stores a custom function; re-registering a package replaces it. */
export function registerFunction(ctx: ClientContext, pkg: unknown, input: unknown): FunctionDescriptor {
  if (typeof pkg !== 'string' || !PACKAGE_PATTERN.test(pkg))
    throw new ClientError('INVALID_ARGUMENT', `Functions.register: the package must look like com.<vendor>.function.<name>, got ${JSON.stringify(pkg)}`);
  if (pkg.startsWith(BUILTIN_PREFIX))
    throw new ClientError('INVALID_ARGUMENT', `Functions.register: ${pkg} is a built-in package name (com.client.function.* is reserved)`);
  let code: string;
  let name = pkg.split('.').pop()!;
  let description = '';
  if (typeof input === 'function') {
    code = Function.prototype.toString.call(input);
    if (/\{\s*\[native code\]\s*\}\s*$/.test(code))
      throw new ClientError('INVALID_ARGUMENT', 'Functions.register: native or bound functions have no source to run in the sandbox');
    if (/^class[\s{]/.test(code)) throw new ClientError('INVALID_ARGUMENT', 'Functions.register: pass a function, not a class');
    if (input.name) name = input.name;
    ctx.logger.once(
      `functions.register.closures`,
      `Functions.register: ${pkg} runs inside the sandbox from its source text; closures over page variables are not available there (use settings, context and Client).`,
    );
  } else if (input !== null && typeof input === 'object' && typeof (input as { code?: unknown }).code === 'string') {
    const o = input as { name?: unknown; description?: unknown; code: string };
    if (o.code.trim() === '') throw new ClientError('INVALID_ARGUMENT', 'Functions.register: code is empty');
    if (o.name !== undefined && typeof o.name !== 'string') throw new ClientError('INVALID_ARGUMENT', 'Functions.register: name must be a string');
    if (o.description !== undefined && typeof o.description !== 'string')
      throw new ClientError('INVALID_ARGUMENT', 'Functions.register: description must be a string');
    code = o.code;
    if (o.name) name = o.name;
    description = o.description ?? '';
  } else {
    throw new ClientError('INVALID_ARGUMENT', 'Functions.register: pass a function or { name, description, code }');
  }
  const registry = ctx.runtime.functions;
  const id = registry.get(pkg)?.id ?? nextId--;
  const fn: RegisteredFunction = { id, package: pkg, name, description, code };
  registry.set(pkg, fn);
  return descriptorOf(fn);
}

export function unregisterFunction(ctx: ClientContext, pkg: string): boolean {
  return ctx.runtime.functions.delete(pkg);
}

/** Functions registered on this device, with their code (what device runs pass as `customFunctions`). */
export function registeredFunctions(ctx: ClientContext): RegisteredFunction[] {
  return [...ctx.runtime.functions.values()];
}

export function descriptorOf(fn: RegisteredFunction): FunctionDescriptor {
  return { id: fn.id, name: fn.name, package: fn.package, description: fn.description, environment: 'any' };
}
