/**
 * Client.App.Actions.{run, runWithResult}. Where a run happens follows design §5:
 * `server` actions go to the backend; `client` and `any` actions run on this device.
 */
import type { ClientContext } from '../core/context.js';
import { ClientError } from '../http/errors.js';
import { isNetworkError, isTimeoutError } from '../http/errors.js';
import { findCachedAction, peekCachedAction } from '../storage/actions-cache.js';
import { isOnline, randomId } from '../storage/connectivity.js';
import { remember } from '../storage/run-state.js';
import { sendOrQueue } from '../storage/run-queue.js';
import { checkIdOrName, tasksPath } from './crud.js';
import { deviceRunId, runOnDevice } from './device-run.js';
import { loadEngine } from './engine.js';
import { takeRunSlot } from './rate-limit.js';
import { QUEUED_RUN_PREFIX, type Action, type RunHandle } from '../contract/actions.js';

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export interface RunOptions {
  /** Sent as `Idempotency-Key`: a retried request with the same key queues no second run. */
  idempotencyKey?: string;
}

function checkPayload(ctx: ClientContext, payload: unknown): Record<string, unknown> {
  if (payload === undefined || payload === null) return {};
  if (!isObject(payload)) throw new ClientError('INVALID_ARGUMENT', 'payload must be a plain object');
  let text: string;
  try {
    text = JSON.stringify(payload);
  } catch (error) {
    throw new ClientError('INVALID_ARGUMENT', `payload must be JSON: ${(error as Error).message}`);
  }
  const limit = ctx.config().limits.payloadChars;
  if (text.length > limit) throw new ClientError('PAYLOAD_TOO_LARGE', `The payload is ${text.length} characters of JSON; the limit is ${limit}`);
  return JSON.parse(text) as Record<string, unknown>;
}

/** The action as the configured environment runs it (live: published snapshot; viewer: working copy). */
async function loadRunnable(ctx: ClientContext, target: string): Promise<Action> {
  // A copy fetched or revalidated within `actionMaxAgeMs` is used as is; an older one is revalidated (304: still it).
  const { environment, actionMaxAgeMs, authToken } = ctx.config();
  const copies = ctx.runtime.actionCopies;
  const key = `${ctx.appId()} ${environment} ${target}`;
  const copy = copies.get(key);
  // Used as is only by the token that fetched it; revalidated by any (a 304 means the same body for this caller).
  if (copy && copy.token === authToken && ctx.now() - copy.at < actionMaxAgeMs) return copy.action;
  warmEngine(ctx, target);
  // Offline: the action as this device cached it (storage/actions-cache); unknown ones go to the backend's queue.
  const cached = () => findCachedAction(ctx, decodeURIComponent(target));
  if (!isOnline()) return (await cached()) ?? offlineUnknown(target);
  try {
    const { status, headers, body } = await ctx.http.send<{ action: Action }>('GET', tasksPath(ctx, `/${target}`), {
      query: { environment, view: 'definitions' },
      headers: copy?.etag ? { 'If-None-Match': copy.etag } : {},
    });
    const action = status === 304 ? copy!.action : body!.action;
    copies.set(key, { action, etag: headers.get('ETag'), at: ctx.now(), token: authToken });
    return action;
  } catch (error) {
    // A refused fetch (404, 403, 422) leaves an expired copy, if any: the next run asks again.
    if (!isNetworkError(error) && !isTimeoutError(error)) throw error;
    return (await cached()) ?? offlineUnknown(target);
  }
}

/**
 * Starts the device engine (its Worker and the wasm) while the action is fetched, when the list this device
 * stored says the action runs here: the fetch and the engine's start overlap instead of following each other.
 */
function warmEngine(ctx: ClientContext, target: string): void {
  void peekCachedAction(ctx, decodeURIComponent(target))
    .then((cached) => {
      if (cached && cached.environment !== 'server' && !cached.pageId) return loadEngine({ assetsUrl: ctx.config().assetsUrl, logger: ctx.logger });
    })
    .catch(() => undefined);
}

/** An action this device has never seen, named while offline: taken for a server action (its run is queued). */
const offlineUnknown = (target: string): Action => ({ name: decodeURIComponent(target), environment: 'server' }) as Action;

async function runOnServer(ctx: ClientContext, target: string, payload: Record<string, unknown>, wait: boolean, options: RunOptions) {
  const idempotencyKey = options.idempotencyKey ?? randomId();
  const keep = (o: { runId?: number; idempotencyKey?: string } | undefined) => {
    if (o?.runId) remember(ctx.runtime.runs.keys, o.runId, (o.idempotencyKey = idempotencyKey));
  };
  const answer = await ctx.http
    .request<{ runId: number; status: string; result?: unknown }>('POST', tasksPath(ctx, `/${target}/run`), {
      json: { payload, wait, environment: ctx.config().environment },
      headers: { 'Idempotency-Key': idempotencyKey },
      timeout: wait ? ctx.config().limits.runTimeoutMs + 15_000 : undefined,
    })
    // A failed run (422, 413) is followed with getRun too: its details name the run.
    .catch((error) => {
      keep(error?.details);
      throw error;
    });
  keep(answer);
  return answer as typeof answer & { idempotencyKey: string };
}

export function createRunner(ctx: ClientContext) {
  async function prepare(name: unknown, payload: unknown) {
    if (typeof name !== 'string' || name.trim() === '') throw new ClientError('INVALID_ARGUMENT', 'name must be the name of an action');
    const target = checkIdOrName(name, 'name');
    const body = checkPayload(ctx, payload);
    const action = await loadRunnable(ctx, target);
    return { target, body, action, onDevice: action.environment !== 'server' };
  }

  return {
    /**
     * Queues the run and resolves once it is queued (on the backend, on this device while offline, or started on
     * this device) with its handle, without a result: `getRun(handle.runId)` follows it.
     */
    async run(name: string, payload?: Record<string, unknown>, options: RunOptions = {}): Promise<RunHandle> {
      const { target, body, action, onDevice } = await prepare(name, payload);
      if (!onDevice) {
        // Sent now when online, else stored and sent once back online, in order, exactly once (storage/run-queue).
        const sent = await sendOrQueue<{ runId: number }>(ctx, {
          method: 'POST',
          path: tasksPath(ctx, `/${target}/run`),
          json: { payload: body, wait: false, environment: ctx.config().environment },
          idempotencyKey: options.idempotencyKey,
          label: `run of "${action.name}"`,
        });
        const idempotencyKey = sent.idempotencyKey;
        if (sent.queued) return { runId: QUEUED_RUN_PREFIX + idempotencyKey, status: 'queued-offline', idempotencyKey };
        const runId = sent.response!.runId;
        remember(ctx.runtime.runs.keys, runId, idempotencyKey);
        return { runId, status: 'queued', idempotencyKey };
      }
      takeRunSlot(ctx);
      const runId = deviceRunId();
      void runOnDevice(ctx, action, body, { runId }).catch((error) => ctx.logger.error(`Run of action "${action.name}" failed`, error));
      return { runId, status: 'running' };
    },

    /** Runs and resolves with the result; rejects with the run's error code (e.g. TIMEOUT) and trace. */
    async runWithResult<T = unknown>(name: string, payload?: Record<string, unknown>, options: RunOptions = {}): Promise<T> {
      const { target, body, action, onDevice } = await prepare(name, payload);
      if (!onDevice) {
        const answer = await runOnServer(ctx, target, body, true, options);
        if (!('result' in answer))
          // `details` is the run's handle: getRun(error.details) follows it.
          throw new ClientError('RUN_PENDING', `Run ${answer.runId} of "${action.name}" is still ${answer.status}: see getRun(error.details)`, answer);
        return answer.result as T;
      }
      takeRunSlot(ctx);
      const outcome = await runOnDevice(ctx, action, body);
      if (outcome.ok) return outcome.result as T;
      throw new ClientError(outcome.error.code || 'RUN_FAILED', outcome.error.errorMessage, {
        errorType: outcome.error.errorType,
        trace: outcome.error.trace.length ? outcome.error.trace : outcome.trace,
      });
    },
  };
}
