import type { ClientContext } from '../core/context.js';
import { loadChunk } from '../core/lazy.js';
import type { FunctionDescriptor } from './catalog.js';
import { descriptorOf, registeredFunctions } from './registry.js';

/** What `Client.App.Tasks.Functions.get()` returns for each function (spec "Function descriptor"). */
export interface FunctionInfo {
  id: number;
  name: string;
  package: string;
  description: string;
}

export interface TasksFunctionsApi {
  /** Built-ins, functions registered on this device, and custom functions stored on the backend. */
  get(options?: { signal?: AbortSignal }): Promise<FunctionInfo[]>;
}

const info = (f: FunctionDescriptor): FunctionInfo => ({ id: f.id, name: f.name, package: f.package, description: f.description });

export function createTasksFunctionsApi(ctx: ClientContext): TasksFunctionsApi {
  return {
    async get(options) {
      // The built-ins' descriptions are the lazy `catalog` chunk of client.js (a studio's function picker).
      const request = ctx.http.request<{ functions: FunctionInfo[] }>('GET', `v1/apps/${ctx.appId()}/tasks/functions`, { signal: options?.signal });
      const [{ functions }, { BUILTIN_FUNCTIONS }] = await Promise.all([request, loadChunk('catalog', ctx.config().assetsUrl)]);
      const seen = new Set<string>();
      const out: FunctionInfo[] = [];
      const add = (f: FunctionInfo) => {
        if (seen.has(f.package)) return;
        seen.add(f.package);
        out.push(f);
      };
      BUILTIN_FUNCTIONS.forEach((f) => add(info(f)));
      registeredFunctions(ctx).forEach((f) => add(info(descriptorOf(f))));
      functions.forEach((f) => add(info(f as FunctionDescriptor)));
      return out;
    },
  };
}
