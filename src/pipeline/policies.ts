/**
 * The checks of a node's policies (`timeout`, `continueOnError`, `retry`; docs/pipeline.md), shared by the
 * engine's validation before a run and the actions' validation at create and update (client and backend).
 */
const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** The first problem of a node's policies as `[path, message]`, or undefined when they are well-formed. */
export function policyProblem(node: Record<string, unknown>, path: string): [string, string] | undefined {
  if (node.timeout !== undefined && !(typeof node.timeout === 'number' && node.timeout > 0 && Number.isFinite(node.timeout)))
    return [`${path}.timeout`, 'must be a positive number of milliseconds'];
  if (node.continueOnError !== undefined && typeof node.continueOnError !== 'boolean') return [`${path}.continueOnError`, 'must be a boolean'];
  const r = node.retry;
  if (r === undefined) return undefined;
  if (!isObject(r)) return [`${path}.retry`, 'must be an object {attempts, backoff, delayMs}'];
  if (!(typeof r.attempts === 'number' && Number.isInteger(r.attempts) && r.attempts >= 1 && r.attempts <= 20))
    return [`${path}.retry.attempts`, 'must be an integer from 1 to 20'];
  if (r.backoff !== undefined && r.backoff !== 'constant' && r.backoff !== 'exponential') return [`${path}.retry.backoff`, 'must be constant or exponential'];
  if (r.delayMs !== undefined && !(typeof r.delayMs === 'number' && r.delayMs >= 0 && Number.isFinite(r.delayMs)))
    return [`${path}.retry.delayMs`, 'must be a number of milliseconds'];
  return undefined;
}
