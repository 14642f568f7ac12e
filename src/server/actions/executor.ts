/** Runs one queued run through the pipeline engine with the backend's host services and the app's custom functions. */
import { customFunctionsForRun, customPackageUses } from '../../functions/custom-packages.js';
import type { HostServices, RunOutcome } from '../../contract/pipeline.js';
import type { ServerContext } from '../context.js';
import { listCustomFunctions } from '../store/functions.js';
import { loadEngine, type Engine } from './engine.js';
import { serverHostServices, type RunHosts } from './host-services.js';
import { runChain } from './log-triggers.js';
import type { RunRow } from './run-store.js';
import { loadScreenScript, screenFunction } from './screens.js';

/** Runs on `engine`: the run thread pool (threads/pool.ts), or the engine on this thread (inline). */
export async function executeRun(ctx: ServerContext, hosts: RunHosts, run: RunRow, signal: AbortSignal, engine?: Engine): Promise<RunOutcome> {
  const { runPipeline } = engine ?? (await loadEngine());
  const { pageId } = run.definition;
  const screen = pageId ? screenFunction(pageId, await loadScreenScript(ctx.db, run.appId, pageId, run.environment)) : undefined;
  // Host calls of the run still in flight when it ends (its time limit, a crash) are cancelled with it.
  const ended = new AbortController();
  const scope = {
    appId: run.appId,
    organizationId: run.organizationId,
    signal: AbortSignal.any([signal, ended.signal]),
    row: run.claimedBy ? { id: run.id, claimedBy: run.claimedBy } : undefined,
    chain: runChain(run),
  };
  try {
    return await runOn(ctx, run, runPipeline, serverHostServices(ctx, hosts, scope), signal, screen);
  } finally {
    ended.abort(new Error('The run has ended'));
  }
}

async function runOn(
  ctx: ServerContext,
  run: RunRow,
  runPipeline: Engine['runPipeline'],
  services: HostServices,
  signal: AbortSignal,
  screen: ReturnType<typeof screenFunction> | undefined,
): Promise<RunOutcome> {
  const { functions } = run.definition;
  const limits = { runTimeoutMs: ctx.limits.runTimeoutMs, payloadChars: ctx.limits.payloadChars, resultBytes: ctx.limits.resultBytes };
  if (screen) {
    return runPipeline({
      functions: [{ functionPackage: screen.package }],
      payload: run.payload,
      context: { ...run.context, payload: run.payload },
      environment: 'server',
      services,
      customFunctions: [screen],
      limits,
      signal,
    });
  }
  // The app's stored custom functions (server or any); read only when the pipeline names a non-built-in package.
  const stored = customPackageUses(functions).size ? await listCustomFunctions(ctx.db, run.appId) : [];
  const custom = customFunctionsForRun(functions, 'server', stored);
  if (!custom.ok) return custom.outcome;
  return runPipeline({
    functions,
    payload: run.payload,
    context: run.context,
    environment: 'server',
    services,
    customFunctions: custom.customFunctions,
    limits,
    signal,
  });
}
