/**
 * Limits of an action definition, the same for the client's validator, the backend's (which is the same
 * module, src/contract/action-validate.ts), the pipeline engine (`limits.maxDepth` defaults to MAX_NODE_DEPTH) and the
 * device's actions cache, so an action that passes create also runs, and one stored before the limits existed
 * cannot break a device.
 */

/** Levels of nested nodes; top-level nodes are level 1 (the engine counts the same way). */
export const MAX_NODE_DEPTH = 32;
/** JSON levels of values inside one node's `settings`. */
export const MAX_SETTINGS_DEPTH = 32;
/** Characters of the JSON text of an action's `functions` and `triggers` together. */
export const MAX_DEFINITION_CHARS = 256 * 1024;
/**
 * JSON levels past which a device refuses an action: the backend's body limit (`limits.bodyDepth`, 256). A valid
 * action stays well below (32 levels of `if` nodes, four JSON levels each, plus 32 of settings: about 165);
 * what broke devices was thousands of levels.
 */
export const MAX_ACTION_JSON_DEPTH = 256;

/** JSON nesting depth of a value (objects and arrays count), walked without recursion; stops past `limit`. */
export function jsonDepth(value: unknown, limit: number): number {
  let max = 0;
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (node === null || typeof node !== 'object') continue;
    if (depth > max) max = depth;
    if (max > limit) return max;
    for (const child of Array.isArray(node) ? node : Object.values(node)) stack.push([child, depth + 1]);
  }
  return max;
}

/**
 * Why a device cannot use an action it received (malformed, or nested past MAX_ACTION_JSON_DEPTH), or undefined.
 * The actions cache drops such an action with a warning and keeps the others; sizes are the backend's check.
 */
export function unusableAction(action: unknown): string | undefined {
  const a = action as { id?: unknown; functions?: unknown; triggers?: unknown } | null;
  const list = (v: unknown) => v === undefined || Array.isArray(v);
  if (!a || typeof a.id !== 'number' || !list(a.functions) || !list(a.triggers)) return 'malformed';
  return jsonDepth(action, MAX_ACTION_JSON_DEPTH) > MAX_ACTION_JSON_DEPTH ? 'nested too deep' : undefined;
}
