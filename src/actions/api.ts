import type { ClientContext } from '../core/context.js';
import { createCrud } from './crud.js';
import { createRunner, type RunOptions } from './run.js';
import { createPipelineApi, type PipelineApi } from './pipeline-api.js';
import { createTasksFunctionsApi, type TasksFunctionsApi } from '../functions/tasks-functions.js';
import { runsChunk, runsHost } from './runs-host.js';
import type { Action, ActionInput, ActionUpdate, GetLogsOptions, LogsPage, RunHandle, RunId, RunInfo, RunRef } from '../contract/actions.js';

/** Client.App.Actions (design §5, §9). */
export interface ActionsApi {
  /** Creates an action (validated here first; unpublished; `active` defaults to true). */
  create(definition: ActionInput): Promise<Action>;
  /** Changes the working copy of the action with this id or name. */
  update(idOrName: number | string, props: ActionUpdate): Promise<Action>;
  remove(idOrName: number | string): Promise<void>;
  /** Every action of the app, each with `lastRunAt` and `nextRunAt`. */
  get(): Promise<Action[]>;
  publish(actionId: number, isPublish: boolean): Promise<Action>;
  /** Server and device records, newest first (default: the last 50 completed and failed). */
  getLogs(options?: GetLogsOptions): Promise<LogsPage>;
  /**
   * Queues a run; resolves once queued (on the backend, on this device while offline, or started on this device)
   * with its handle `{ runId, status, idempotencyKey? }`, without a result: `getRun(handle)` follows it.
   */
  run(name: string, payload?: Record<string, unknown>, options?: RunOptions): Promise<RunHandle>;
  /**
   * Where a run stands: status, timings, result or error, trace. Takes a run id or a whole handle (with its
   * `idempotencyKey`, which a client token needs for a server run this client no longer remembers, e.g. after a
   * reload). ClientError RUN_NOT_FOUND for a run this app does not have (or, with a client token, a server run
   * without the key it was queued with).
   */
  getRun(run: RunId | RunRef): Promise<RunInfo>;
  /** Runs and resolves with the result. */
  runWithResult<T = unknown>(name: string, payload?: Record<string, unknown>, options?: RunOptions): Promise<T>;
  /** Runs the debug compile page's pipeline on this device (`ENV.taskPipeline`, `?payload=`). */
  Pipeline: PipelineApi;
}

/** Client.App.Tasks (the function catalog). */
export interface TasksApi {
  /** The function catalog: built-ins, functions registered on this device, custom functions stored on the backend. */
  Functions: TasksFunctionsApi;
}

export function createActionsApi(ctx: ClientContext): ActionsApi {
  return {
    ...createCrud(ctx),
    ...createRunner(ctx),
    getLogs: async (options) => (await runsChunk(ctx)).getLogs(runsHost(ctx), options),
    getRun: async (run) => (await runsChunk(ctx)).getRun(runsHost(ctx), run),
    Pipeline: createPipelineApi(ctx),
  };
}

export function createTasksApi(ctx: ClientContext): TasksApi {
  return { Functions: createTasksFunctionsApi(ctx) };
}
