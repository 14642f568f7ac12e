/** Runs on the device: the pipeline engine with the client's host services, a local log record, upload. */
import { closedError, type ClientContext } from '../core/context.js';
import { randomId } from '../storage/connectivity.js';
import { customFunctionsForRun, customPackageUses } from '../functions/custom-packages.js';
import { registeredFunctions } from '../functions/registry.js';
import type { RunOutcome } from '../contract/pipeline.js';
import { failure, notSerializable } from './run-failure.js';
import { saveRunLog } from '../storage/run-logs.js';
import { deviceHostServices } from './device-services.js';
import { failedResult } from '../contract/run-info.js';
import { loadEngine } from './engine.js';
import { scheduleLogUpload } from './logs.js';
import { runsChunk, runsHost } from './runs-host.js';
import type { Action, ActionLog, LogMode } from '../contract/actions.js';

/** A new device run id: `dev-` and a random key (the run's log record keeps it as its `deviceKey`). */
export const deviceRunId = () => `dev-${randomId()}`;

async function execute(ctx: ClientContext, action: Action, payload: Record<string, unknown>, context: Record<string, unknown>): Promise<RunOutcome> {
  const limits = ctx.config().limits;
  // A screen-targeted action on the device: the handler this screen registered (in the lazy `runs` chunk).
  if (action.pageId) return (await runsChunk(ctx)).runScreenAction(ctx, action, payload, context);
  const custom = await deviceCustomFunctions(ctx, action.functions);
  if (!custom.ok) return custom.outcome;
  const { runPipeline } = await loadEngine({ assetsUrl: ctx.config().assetsUrl, logger: ctx.logger });
  return runPipeline({
    functions: action.functions,
    payload,
    context,
    environment: 'client',
    services: deviceHostServices(ctx),
    customFunctions: custom.customFunctions,
    limits: { runTimeoutMs: limits.runTimeoutMs, payloadChars: limits.payloadChars, resultBytes: limits.resultBytes },
  });
}

/**
 * The custom functions of a device run: the app's backend-stored ones (client/any, cached on the device,
 * fetched only when the pipeline names a package not registered here), then those registered on this
 * device with `Client.Functions.register` (which win for the same package).
 */
async function deviceCustomFunctions(ctx: ClientContext, functions: unknown) {
  const registered = registeredFunctions(ctx);
  const need = [...customPackageUses(functions).keys()].filter((pkg) => !registered.some((f) => f.package === pkg));
  // The backend-stored ones come with the lazy `runs` chunk: most device runs use built-ins only.
  const stored = need.length ? await (await runsChunk(ctx)).customFunctionsCache(runsHost(ctx)).get(need) : [];
  return customFunctionsForRun(functions, 'client', stored, registered);
}

/**
 * Runs an action here and records exactly one log record (IndexedDB, then uploaded). `runId` (`dev-…`, the
 * record's `deviceKey`) names the run for `getRun`: in progress until its record is stored.
 */
export async function runOnDevice(
  ctx: ClientContext,
  action: Action,
  payload: Record<string, unknown>,
  init: { mode?: LogMode; context?: Record<string, unknown>; runId?: string } = {},
): Promise<RunOutcome> {
  // Closed while this run was being prepared (its action fetched): it never starts (Client.close()).
  if (ctx.runtime.closed) throw closedError();
  const mode = init.mode ?? 'on-demand';
  const context = init.context ?? { trigger: 'manual' };
  const started = ctx.now();
  const runId = init.runId ?? deviceRunId();
  // The app the run belongs to, for its record: a configure({ appId }) while it runs does not move the record.
  const appId = ctx.config().appId;
  const running = ctx.runtime.runs.device;
  running.set(runId, { actionId: action.id, actionName: action.name, startedAt: new Date(started).toISOString() });
  const t0 = typeof performance !== 'undefined' ? performance.now() : Date.now();
  let outcome: RunOutcome;
  try {
    outcome = await execute(ctx, action, payload, context);
  } catch (error) {
    outcome = failure((error as Error)?.name || 'Error', 'RUN_FAILED', (error as Error)?.message ?? String(error));
  }
  if (outcome.ok) {
    let size: number | undefined;
    try {
      size = new TextEncoder().encode(JSON.stringify(outcome.result ?? null) ?? 'null').length;
    } catch (error) {
      outcome = notSerializable(error, outcome.trace);
    }
    if (size !== undefined && size > ctx.config().limits.resultBytes)
      outcome = {
        ...failure('ResultTooLargeError', 'RESULT_TOO_LARGE', `The result is ${size} bytes; the limit is ${ctx.config().limits.resultBytes}`),
        trace: outcome.trace,
      };
  }
  const duration = Math.round((typeof performance !== 'undefined' ? performance.now() : Date.now()) - t0);
  const log: ActionLog = {
    id: null,
    createdAt: new Date(started).toISOString(),
    type: !outcome.ok ? 'app.task.failed' : mode === 'scheduled' ? 'app.task.completed' : 'app.action.completed',
    data: {
      mode,
      duration,
      actionId: action.id,
      result: outcome.ok ? (outcome.result ?? null) : failedResult(outcome),
      source: 'device',
      trigger: context.trigger,
      trace: outcome.trace,
    },
    deviceKey: runId,
  };
  // The outcome is out as soon as its record is handed to the writer: the next run does not wait for this write,
  // and records of runs that end meanwhile go in one transaction (run-logs.ts). The run reads as running (getRun,
  // Client.close waits for it) until its record is stored; what reads the records waits for the writer.
  // (A throw while handing it over, a missing app say, is a failed write like any other: warned, never the run's.)
  void new Promise<void>((resolve) => resolve(saveRunLog(ctx, log, appId ?? ctx.appId())))
    .then(() => scheduleLogUpload(ctx))
    .catch((error: unknown) => ctx.logger.warn('Could not store the log of a device run', error))
    .finally(() => running.delete(runId));
  return outcome;
}
