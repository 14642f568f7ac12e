/** Client.App.Actions.Pipeline (spec "Debug path"): the run itself is the lazy `pipeline` chunk, src/actions/pipeline-run.ts. */
import type { ClientContext } from '../core/context.js';
import { loadChunk } from '../core/lazy.js';
import { registeredFunctions } from '../functions/registry.js';
import { ClientError } from '../http/errors.js';
import type { RunOutcome } from '../contract/pipeline.js';
import { deviceHostServices } from './device-services.js';
import { loadEngine } from './engine.js';
import type { PipelineRunOptions } from './pipeline-run.js';

export type { PipelineRunOptions };

export interface PipelineApi {
  /** Runs the page's pipeline on this device, logs its trace to the console and resolves with the result (rejects with a ClientError carrying the run error). */
  run<T = unknown>(options?: PipelineRunOptions): Promise<T>;
  /** Same, resolving with the whole outcome (result or error, trace, duration) instead of throwing. */
  runWithTrace(options?: PipelineRunOptions): Promise<RunOutcome>;
}

export function createPipelineApi(ctx: ClientContext): PipelineApi {
  const host = { ctx, loadEngine, services: () => deviceHostServices(ctx), registered: () => registeredFunctions(ctx), ClientError };
  const runWithTrace = async (options?: PipelineRunOptions): Promise<RunOutcome> =>
    (await loadChunk('pipeline', ctx.config().assetsUrl)).runWithTrace(host, options);
  return {
    runWithTrace,
    async run<T>(options?: PipelineRunOptions): Promise<T> {
      const outcome = await runWithTrace(options);
      if (!outcome.ok) throw new ClientError(outcome.error.code, `${outcome.error.errorType}: ${outcome.error.errorMessage}`, outcome.error);
      return outcome.result as T;
    },
  };
}
