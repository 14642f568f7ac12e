/**
 * The engine's check of a pipeline before anything runs: the node rules every side shares
 * (src/contract/pipeline-nodes.ts, the same as the action validator's), then what only a run knows: which
 * functions exist here (built-ins for this side, the custom packages given) and what the tree needs (user code,
 * loops). Errors name the node path (`functions[1].conditions[0].condition`).
 */
import { builtinDescriptor, builtinName } from '../functions/catalog.js';
import type { PipelineNode } from '../contract/pipeline.js';
import { PipelineFailure } from '../contract/pipeline-failure.js';
import { nodeIssues } from '../contract/pipeline-nodes.js';

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

/** Checks the whole tree before anything runs; throws the first issue as a PipelineFailure. */
export function validatePipeline(input: ValidationInput): PipelineShape {
  const [issue] = nodeIssues(input.functions, 'functions', [], input.maxDepth);
  if (issue?.code === 'DEPTH_LIMIT') throw new PipelineFailure('DEPTH_LIMIT', 'LimitError', `${issue.path}: ${issue.message}`);
  if (issue) throw invalid(issue.path, issue.message);
  const shape: PipelineShape = { usesUserCode: false, hasLoops: false };
  walk(input.functions as PipelineNode[], 'functions', input, shape);
  return shape;
}

/** What only a run knows, over a tree that passed the shared rules. */
function walk(list: readonly PipelineNode[] | undefined, base: string, input: ValidationInput, shape: PipelineShape): void {
  list?.forEach((node, index) => {
    const path = `${base}[${index}]`;
    if (node.type === 'loop') {
      shape.hasLoops = true;
      walk(node.functions, `${path}.functions`, input, shape);
    } else if (node.type === 'if') {
      node.conditions.forEach((c, i) => walk(c.functions, `${path}.conditions[${i}].functions`, input, shape));
      walk(node.elseFunctions, `${path}.elseFunctions`, input, shape);
    } else {
      const pkg = node.functionPackage;
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
      } else if (input.customPackages.has(pkg)) shape.usesUserCode = true;
      else throw new PipelineFailure('UNKNOWN_FUNCTION', 'ValidationError', `${path}: unknown function package ${JSON.stringify(pkg)}`);
      walk(node.functions, `${path}.functions`, input, shape);
    }
  });
}
