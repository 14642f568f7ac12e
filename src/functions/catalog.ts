/** The function catalog: built-in packages (trusted host code or engine steps) and their descriptors. */

export type FunctionEnvironment = 'server' | 'client' | 'any';

/** What `Client.App.Tasks.Functions.get()` lists (spec "Function descriptor"), plus where it can run. */
export interface FunctionDescriptor {
  id: number;
  name: string;
  package: string;
  description: string;
  environment: FunctionEnvironment;
}

export const BUILTIN_PREFIX = 'com.client.function.';

/** The built-in functions' short names, in catalog order (ids 1, 2, …): all client.js needs to tell them apart. */
const BUILTIN_NAMES = [
  'if',
  'set',
  'return',
  'log',
  'script',
  'read-datasource',
  'insert-entry',
  'update-entry',
  'delete-entry',
  'send-notification',
  'http-request',
] as const;

/**
 * The descriptors (titles and descriptions): the server's catalog, the engine, and `Tasks.Functions.get()`, for
 * which client.js loads this file as its lazy `catalog` chunk (src/core/lazy.ts). Pure, so client.js drops it.
 */
function describeBuiltins(): readonly FunctionDescriptor[] {
  const about: Record<(typeof BUILTIN_NAMES)[number], readonly [string, string]> = {
    if: ['If', 'Runs its nested functions only when settings.condition is true; otherwise skips them (not a failure).'],
    set: ['Set variables', 'Assigns each setting as a name in the run context and returns the assigned object.'],
    return: ['Return', 'Ends the run with settings.value as its result.'],
    log: ['Log', 'Writes settings.message into the run trace.'],
    script: ['Script', 'Runs settings.code (the body of an async function of settings, context and Client) in the sandbox.'],
    'read-datasource': ['Read data source', 'Reads entries of a data source (where, order, limit, offset) into `records`.'],
    'insert-entry': ['Insert entry', 'Inserts settings.data into a data source; returns `entry`.'],
    'update-entry': ['Update entry', 'Updates entry settings.id of a data source with settings.data; returns `entry`.'],
    'delete-entry': ['Delete entry', 'Deletes entry settings.id of a data source.'],
    'send-notification': ['Send notification', 'Creates an app notification (data, scope, status, pushNotification); returns `notification`.'],
    'http-request': ['HTTP request', 'Sends an HTTP request (url, method, headers, body); returns `response`. Server only.'],
  };
  return Object.freeze(
    BUILTIN_NAMES.map((name, index) => ({
      id: index + 1,
      name: about[name][0],
      package: BUILTIN_PREFIX + name,
      description: about[name][1],
      environment: name === 'http-request' ? ('server' as const) : ('any' as const),
    })),
  );
}

export const BUILTIN_FUNCTIONS: readonly FunctionDescriptor[] = /* @__PURE__ */ describeBuiltins();

const indexByPackage = () => new Map(BUILTIN_FUNCTIONS.map((f) => [f.package, f]));
const BY_PACKAGE = /* @__PURE__ */ indexByPackage();

/** Whether `pkg` is a built-in package (`com.client.function.set`). */
export function isBuiltin(pkg: string): boolean {
  return pkg.startsWith(BUILTIN_PREFIX) && (BUILTIN_NAMES as readonly string[]).includes(pkg.slice(BUILTIN_PREFIX.length));
}

export function builtinDescriptor(pkg: string): FunctionDescriptor | undefined {
  return BY_PACKAGE.get(pkg);
}

/** The short name of a built-in package (`set` for `com.client.function.set`), or undefined. */
export function builtinName(pkg: string): string | undefined {
  return BY_PACKAGE.has(pkg) ? pkg.slice(BUILTIN_PREFIX.length) : undefined;
}

/** Package names: `com.<vendor>.function.<name>` (spec), letters, digits, `-` and `_` in each part. */
export const PACKAGE_PATTERN = /^com\.[a-z0-9][a-z0-9_-]*\.function\.[a-z0-9][a-z0-9_.-]*$/i;
