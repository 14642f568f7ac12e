/**
 * The rules of pipeline nodes (function, loop and if nodes, their policies and nesting), in one place for the
 * client's and the backend's action validator (src/contract/action-validate.ts) and the engine's check before a
 * run (src/pipeline/validate.ts, which adds what only a run knows: the side it runs on and the functions it has).
 * Every issue names the offending path, e.g. `functions[1].conditions[0].condition`.
 */
import { policyProblem } from '../pipeline/policies.js';
import { MAX_NODE_DEPTH, MAX_SETTINGS_DEPTH, jsonDepth } from './action-limits.js';

export interface ValidationIssue {
  path: string;
  message: string;
  /** `shape`: wrong type or missing field (HTTP 400); `meaning`: well-formed but invalid (HTTP 422). */
  kind: 'shape' | 'meaning';
  /** The engine's failure code when it is not INVALID_PIPELINE (DEPTH_LIMIT). */
  code?: 'DEPTH_LIMIT';
}

const NODE_TYPES = ['function', 'loop', 'if'];
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Pushes the issues of a list of nodes onto `issues`. Top-level nodes are level 1; a node deeper than `maxDepth`
 * (default MAX_NODE_DEPTH; the engine passes `limits.maxDepth`) is an issue at its path.
 */
export function nodeIssues(nodes: unknown, path: string, issues: ValidationIssue[], maxDepth = MAX_NODE_DEPTH): ValidationIssue[] {
  validateNodes(nodes, path, 1, issues, maxDepth);
  return issues;
}

function validateNodes(nodes: unknown, path: string, depth: number, issues: ValidationIssue[], maxDepth: number): void {
  if (!Array.isArray(nodes)) {
    issues.push({ path, message: 'must be an array of pipeline nodes', kind: 'shape' });
    return;
  }
  if (depth > maxDepth) {
    if (nodes.length > 0) issues.push({ path: `${path}[0]`, message: `nodes are nested deeper than ${maxDepth} levels`, kind: 'meaning', code: 'DEPTH_LIMIT' });
    return;
  }
  nodes.forEach((node, i) => validateNode(node, `${path}[${i}]`, depth, issues, maxDepth));
}

function validateNode(node: unknown, path: string, depth: number, issues: ValidationIssue[], maxDepth: number): void {
  if (!isObject(node)) {
    issues.push({ path, message: 'must be an object', kind: 'shape' });
    return;
  }
  const type = node.type ?? 'function';
  if (typeof type !== 'string' || !NODE_TYPES.includes(type)) {
    issues.push({ path: `${path}.type`, message: `must be one of ${NODE_TYPES.join(', ')}`, kind: 'shape' });
    return;
  }
  if (node.settings !== undefined && jsonDepth(node.settings, MAX_SETTINGS_DEPTH) > MAX_SETTINGS_DEPTH) {
    issues.push({ path: `${path}.settings`, message: `nests deeper than ${MAX_SETTINGS_DEPTH} levels`, kind: 'meaning' });
    return;
  }
  const problem = policyProblem(node, path);
  if (problem) issues.push({ path: problem[0], message: problem[1], kind: 'shape' });
  if (type === 'function') {
    if (typeof node.functionPackage !== 'string' || node.functionPackage.trim() === '')
      issues.push({ path: `${path}.functionPackage`, message: 'is required on a function node (e.g. com.client.function.set)', kind: 'shape' });
    if (node.settings !== undefined && !isObject(node.settings)) issues.push({ path: `${path}.settings`, message: 'must be an object', kind: 'shape' });
    if (node.functions !== undefined) validateNodes(node.functions, `${path}.functions`, depth + 1, issues, maxDepth);
  } else if (type === 'loop') {
    if (node.items === undefined && node.range === undefined) issues.push({ path, message: 'a loop node needs `items` or `range`', kind: 'shape' });
    if (node.items !== undefined && (typeof node.items !== 'string' || node.items.trim() === ''))
      issues.push({ path: `${path}.items`, message: 'must be the name of a context property holding an array', kind: 'shape' });
    if (node.range !== undefined) {
      if (!isObject(node.range)) issues.push({ path: `${path}.range`, message: 'must be an object { from, to }', kind: 'shape' });
      else
        for (const key of ['from', 'to'] as const) {
          const v = node.range[key];
          if (!(Number.isInteger(v) || (typeof v === 'string' && v.trim() !== '')))
            issues.push({ path: `${path}.range.${key}`, message: 'must be an integer or an expression', kind: 'shape' });
        }
    }
    if (node.functions !== undefined) validateNodes(node.functions, `${path}.functions`, depth + 1, issues, maxDepth);
  } else {
    if (!Array.isArray(node.conditions) || node.conditions.length === 0)
      issues.push({ path: `${path}.conditions`, message: 'an if node needs a non-empty array of { condition, functions }', kind: 'shape' });
    else
      node.conditions.forEach((c: unknown, j: number) => {
        const at = `${path}.conditions[${j}]`;
        if (!isObject(c)) return void issues.push({ path: at, message: 'must be an object { condition, functions }', kind: 'shape' });
        if (typeof c.condition !== 'string' || c.condition.trim() === '')
          issues.push({ path: `${at}.condition`, message: 'must be a non-empty expression string', kind: 'shape' });
        if (c.functions !== undefined) validateNodes(c.functions, `${at}.functions`, depth + 1, issues, maxDepth);
      });
    if (node.elseFunctions !== undefined) validateNodes(node.elseFunctions, `${path}.elseFunctions`, depth + 1, issues, maxDepth);
  }
}
