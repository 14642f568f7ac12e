import { builtinDescriptor, builtinName } from '../functions/catalog.js';
import { PipelineFailure } from './failure.js';
import { policyProblem } from './policies.js';
import type { PipelineNode } from './types.js';

export interface ValidationInput {
  functions: unknown;
  environment: 'server' | 'client';
  customPackages: ReadonlySet<string>;
  maxDepth: number;
}

export interface PipelineShape {
  /** Whether any node runs user code (script, custom function): the guest gets its bridged Client. */
  usesUserCode: boolean;
  /** Whether there is any loop node. */
  hasLoops: boolean;
}

const invalid = (path: string, message: string) => new PipelineFailure('INVALID_PIPELINE', 'ValidationError', `${path}: ${message}`);
const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** Checks the whole tree before anything runs; errors name the node path (`functions[1].conditions[0].condition`). */
export function validatePipeline(input: ValidationInput): PipelineShape {
  const shape: PipelineShape = { usesUserCode: false, hasLoops: false };
  if (!Array.isArray(input.functions)) throw invalid('functions', 'must be an array of nodes');
  walk(input.functions, 'functions', 1, input, shape);
  return shape;
}

function walkList(list: unknown, path: string, depth: number, input: ValidationInput, shape: PipelineShape): void {
  if (list === undefined || list === null) return;
  if (!Array.isArray(list)) throw invalid(path, 'must be an array of nodes');
  walk(list, path, depth, input, shape);
}

function walk(list: unknown[], base: string, depth: number, input: ValidationInput, shape: PipelineShape): void {
  list.forEach((raw, index) => {
    const path = `${base}[${index}]`;
    if (depth > input.maxDepth) throw new PipelineFailure('DEPTH_LIMIT', 'LimitError', `${path}: nodes are nested deeper than ${input.maxDepth} levels`);
    if (!isObject(raw)) throw invalid(path, 'must be an object');
    const node = raw as unknown as PipelineNode;
    const problem = policyProblem(raw, path);
    if (problem) throw invalid(...problem);
    switch (node.type) {
      case 'loop': {
        shape.hasLoops = true;
        if (node.items === undefined && node.range === undefined) throw invalid(path, 'a loop needs items or range');
        if (node.items !== undefined && (typeof node.items !== 'string' || node.items.trim() === ''))
          throw invalid(`${path}.items`, 'must name a context property holding an array');
        if (node.items === undefined) {
          if (!isObject(node.range)) throw invalid(`${path}.range`, 'must be an object {from, to}');
          for (const key of ['from', 'to'] as const) {
            const v: unknown = node.range[key];
            if (!((typeof v === 'number' && Number.isInteger(v)) || (typeof v === 'string' && v.trim() !== '')))
              throw invalid(`${path}.range.${key}`, 'must be an integer or an expression');
          }
        }
        walkList(node.functions, `${path}.functions`, depth + 1, input, shape);
        return;
      }
      case 'if': {
        if (!Array.isArray(node.conditions) || node.conditions.length === 0) throw invalid(`${path}.conditions`, 'must be a non-empty array');
        node.conditions.forEach((c, i) => {
          if (!isObject(c)) throw invalid(`${path}.conditions[${i}]`, 'must be an object {condition, functions}');
          if (typeof c.condition !== 'string' || c.condition.trim() === '') throw invalid(`${path}.conditions[${i}].condition`, 'must be an expression string');
          walkList(c.functions, `${path}.conditions[${i}].functions`, depth + 1, input, shape);
        });
        walkList(node.elseFunctions, `${path}.elseFunctions`, depth + 1, input, shape);
        return;
      }
      case undefined:
      case 'function': {
        const pkg = node.functionPackage;
        if (typeof pkg !== 'string' || pkg.trim() === '') throw invalid(`${path}.functionPackage`, 'is required');
        if (node.settings !== undefined && !isObject(node.settings)) throw invalid(`${path}.settings`, 'must be an object');
        const builtin = builtinDescriptor(pkg);
        if (builtin) {
          if (builtin.environment === 'server' && input.environment !== 'server')
            throw new PipelineFailure('FUNCTION_UNAVAILABLE', 'ValidationError', `${path}: ${pkg} runs on the server only`);
          const name = builtinName(pkg);
          if (name === 'script') {
            if (typeof node.settings?.code !== 'string') throw invalid(`${path}.settings.code`, 'must be the JavaScript source of the script');
            shape.usesUserCode = true;
          }
          if (name === 'if' && (node.settings === undefined || !('condition' in node.settings))) throw invalid(`${path}.settings.condition`, 'is required');
        } else if (input.customPackages.has(pkg)) {
          shape.usesUserCode = true;
        } else {
          throw new PipelineFailure('UNKNOWN_FUNCTION', 'ValidationError', `${path}: unknown function package ${JSON.stringify(pkg)}`);
        }
        walkList(node.functions, `${path}.functions`, depth + 1, input, shape);
        return;
      }
      default:
        throw invalid(`${path}.type`, `must be function, loop or if, got ${JSON.stringify((node as { type?: unknown }).type)}`);
    }
  });
}
