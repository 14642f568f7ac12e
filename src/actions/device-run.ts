/** Runs on the device: the pipeline engine with the client's host services, a local log record, upload. */
import { closedError, type ClientContext } from '../core/context.js';
import { randomId } from '../storage/connectivity.js';
import { customFunctionsForRun, customPackageUses } from '../functions/custom-packages.js';
import { registeredFunctions } from '../functions/registry.js';
import { remoteHandlerOf } from '../page/remote-execution.js';
import type { RunOutcome } from '../contract/pipeline.js';
import { saveRunLog } from '../storage/run-logs.js';
import { deviceHostServices } from './device-services.js';
import { failedResult } from '../contract/run-info.js';
import { loadEngine } from './engine.js';
import { scheduleLogUpload } from './logs.js';
import { runsChunk, runsHost } from './runs-host.js';
import type { Action, ActionLog, LogMode } from '../contract/actions.js';

const failure = (errorType: string, code: string, errorMessage: string): RunOutcome => ({
  ok: false,
  error: { errorType, code, errorMessage, trace: [] },
  trace: [],
  durationMs: 0,
});

/** A new device run id: `dev-` and a random key (the run's log record keeps it as its `deviceKey`). */
export const deviceRunId = () => `dev-${randomId()}`;

async function execute(ctx: ClientContext, action: Action, payload: Record<string, unknown>, context: Record<string, unknown>): Promise<RunOutcome> {
  const limits = ctx.config().limits;
  if (action.pageId) {
    // A screen-targeted action on the device: the handler this screen registered.
    const handler = remoteHandlerOf(ctx);
    if (!handler || ctx.config().pageId !== action.pageId)
      return failure(
        'ScreenError',
        'SCREEN_NOT_LOADED',
        `Action "${action.name}" targets screen ${action.pageId}, which has not registered Client.Page.onRemoteExecution() here`,
      );
    return runScreenHandler(ctx, () => handler(payload, context), limits.runTimeoutMs);
  }
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

const TIMED_OUT = Symbol('timed out');

/**
 * Calls a screen's handler within the run's time limit (`limits.runTimeoutMs`). A handler that has not
 * settled by then fails the run with TIMEOUT (its promise is left to settle unobserved; a handler that
 * blocks the thread synchronously cannot be stopped). The result is kept as its JSON copy, what the log
 * stores and a server run of the same action would give.
 */
async function runScreenHandler(ctx: ClientContext, call: () => unknown, limitMs: number): Promise<RunOutcome> {
  const started = ctx.now();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let result: unknown;
  try {
    result = await Promise.race([
      new Promise<unknown>((resolve) => resolve(call())),
      new Promise<typeof TIMED_OUT>((resolve) => {
        timer = setTimeout(() => resolve(TIMED_OUT), limitMs);
      }),
    ]);
  } catch (error) {
    return failure((error as Error)?.name || 'Error', 'FUNCTION_FAILED', (error as Error)?.message ?? String(error));
  } finally {
    clearTimeout(timer);
  }
  if (result === TIMED_OUT) return { ...failure('TimeoutError', 'TIMEOUT', `The run took longer than ${limitMs} ms and was stopped`), durationMs: limitMs };
  try {
    const json = JSON.stringify(result);
    result = json === undefined ? undefined : JSON.parse(json);
  } catch (error) {
    return notSerializable(error, []);
  }
  return { ok: true, result, trace: [], durationMs: ctx.now() - started };
}

const notSerializable = (error: unknown, trace: RunOutcome['trace']): RunOutcome => ({
  ...failure('ResultError', 'RESULT_NOT_SERIALIZABLE', `The result cannot be stored as JSON: ${(error as Error)?.message ?? String(error)}`),
  trace,
});

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
  try {
    await saveRunLog(ctx, log);
    scheduleLogUpload(ctx);
  } catch (error) {
    ctx.logger.warn('Could not store the log of a device run', error);
  } finally {
    running.delete(runId);
  }
  return outcome;
}
