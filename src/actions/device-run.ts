/** Runs on the device: the pipeline engine with the client's host services, a local log record, upload. */
import type { ClientContext } from '../core/context.js';
import { customFunctionsCache } from '../functions/custom-cache.js';
import { customFunctionsForRun, customPackageUses } from '../functions/custom-packages.js';
import { registeredFunctions } from '../functions/registry.js';
import { remoteHandlerOf } from '../page/remote-execution.js';
import type { RunOutcome } from '../pipeline/types.js';
import { saveRunLog } from '../storage/run-logs.js';
import { deviceHostServices } from './device-services.js';
import { loadEngine } from './engine.js';
import { scheduleLogUpload } from './logs.js';
import type { Action, ActionLog, LogMode } from './types.js';

const failure = (errorType: string, code: string, errorMessage: string): RunOutcome => ({
  ok: false,
  error: { errorType, code, errorMessage, trace: [] },
  trace: [],
  durationMs: 0,
});

const randomKey = () =>
  typeof crypto !== 'undefined' && 'randomUUID' in crypto ? crypto.randomUUID() : `${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 12)}`;

async function execute(ctx: ClientContext, action: Action, payload: Record<string, unknown>, context: Record<string, unknown>): Promise<RunOutcome> {
  const limits = ctx.config().limits;
  if (action.pageId) {
    // A screen-targeted action on the device: the handler this screen registered.
    const handler = remoteHandlerOf(ctx);
    if (!handler || ctx.config().pageId !== action.pageId)
      return failure('ScreenError', 'SCREEN_NOT_LOADED', `Action "${action.name}" targets screen ${action.pageId}, which has not registered Client.Page.onRemoteExecution() here`);
    const started = ctx.now();
    try {
      return { ok: true, result: await handler(payload, context), trace: [], durationMs: ctx.now() - started };
    } catch (error) {
      return failure((error as Error)?.name || 'Error', 'FUNCTION_FAILED', (error as Error)?.message ?? String(error));
    }
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

/**
 * The custom functions of a device run: the app's backend-stored ones (client/any, cached on the device,
 * fetched only when the pipeline names a package not registered here), then those registered on this
 * device with `Client.Functions.register` (which win for the same package).
 */
async function deviceCustomFunctions(ctx: ClientContext, functions: unknown) {
  const registered = registeredFunctions(ctx);
  const need = [...customPackageUses(functions).keys()].filter((pkg) => !registered.some((f) => f.package === pkg));
  const stored = need.length ? await customFunctionsCache(ctx).get(need) : [];
  return customFunctionsForRun(functions, 'client', stored, registered);
}

/** Runs an action here and records exactly one log record (IndexedDB, then uploaded). */
export async function runOnDevice(
  ctx: ClientContext,
  action: Action,
  payload: Record<string, unknown>,
  init: { mode?: LogMode; context?: Record<string, unknown> } = {},
): Promise<RunOutcome> {
  const mode = init.mode ?? 'on-demand';
  const context = init.context ?? { trigger: 'manual' };
  const started = ctx.now();
  const t0 = typeof performance !== 'undefined' ? performance.now() : Date.now();
  let outcome: RunOutcome;
  try {
    outcome = await execute(ctx, action, payload, context);
  } catch (error) {
    outcome = failure((error as Error)?.name || 'Error', 'RUN_FAILED', (error as Error)?.message ?? String(error));
  }
  if (outcome.ok) {
    const size = new TextEncoder().encode(JSON.stringify(outcome.result ?? null) ?? 'null').length;
    if (size > ctx.config().limits.resultBytes)
      outcome = { ...failure('ResultTooLargeError', 'RESULT_TOO_LARGE', `The result is ${size} bytes; the limit is ${ctx.config().limits.resultBytes}`), trace: outcome.trace };
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
      result: outcome.ok
        ? (outcome.result ?? null)
        : { errorType: outcome.error.errorType, errorMessage: outcome.error.errorMessage, code: outcome.error.code, trace: outcome.error.trace.length ? outcome.error.trace : outcome.trace },
      source: 'device',
      trigger: context.trigger,
    },
    deviceKey: `dev-${randomKey()}`,
  };
  try {
    await saveRunLog(ctx, log);
    scheduleLogUpload(ctx);
  } catch (error) {
    ctx.logger.warn('Could not store the log of a device run', error);
  }
  return outcome;
}
