import type { ClientContext } from '../core/context.js';
import type { FunctionDescriptor } from './catalog.js';
import { descriptorOf, registerFunction, registeredFunctions, unregisterFunction, type RegisterInput } from './registry.js';

/** Client.Functions: custom function packages registered on this device. */
export interface FunctionsApi {
  /**
   * Registers a custom function package. A JS function is registered by its source text and runs
   * **inside the sandbox** as `(settings, context) => result` (it may be async; closures over page
   * variables are not available). Or pass `{ name, description, code }` with that source.
   */
  register(pkg: string, fn: RegisterInput): FunctionDescriptor;
  /** Removes a function registered on this device; false when there was none. */
  unregister(pkg: string): boolean;
  /** The functions registered on this device. */
  list(): FunctionDescriptor[];
}

export function createFunctionsApi(ctx: ClientContext): FunctionsApi {
  return {
    register: (pkg, fn) => registerFunction(ctx, pkg, fn),
    unregister: (pkg) => unregisterFunction(ctx, pkg),
    list: () => registeredFunctions(ctx).map(descriptorOf),
  };
}
