/** Runs one queued run through the pipeline engine with the backend's host services. */
import type { RunOutcome } from '../../pipeline/types.js';
import type { ServerContext } from '../context.js';
import { loadEngine } from './engine.js';
import { serverHostServices } from './host-services.js';
import type { RunRow } from './run-store.js';
import { loadScreenScript, screenFunction } from './screens.js';

export async function executeRun(ctx: ServerContext, run: RunRow, signal: AbortSignal): Promise<RunOutcome> {
  const { runPipeline } = await loadEngine();
  const { pageId, functions } = run.definition;
  const screen = pageId ? screenFunction(pageId, await loadScreenScript(ctx.db, run.appId, pageId, run.environment)) : undefined;
  return runPipeline({
    functions: screen ? [{ functionPackage: screen.package }] : functions,
    payload: run.payload,
    context: screen ? { ...run.context, payload: run.payload } : run.context,
    environment: 'server',
    services: serverHostServices(ctx, { appId: run.appId, organizationId: run.organizationId, signal }),
    customFunctions: screen ? [screen] : undefined,
    limits: { runTimeoutMs: ctx.limits.runTimeoutMs, payloadChars: ctx.limits.payloadChars, resultBytes: ctx.limits.resultBytes },
    signal,
  });
}
