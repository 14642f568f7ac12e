import type { ClientContext } from '../core/context.js';
import { createCrud } from './crud.js';
import { getLogs } from './logs.js';
import { createRunner, type RunOptions } from './run.js';
import type { Action, ActionInput, ActionUpdate, GetLogsOptions, LogsPage } from './types.js';

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
  /** Queues a run; resolves once queued, without a result. */
  run(name: string, payload?: Record<string, unknown>, options?: RunOptions): Promise<void>;
  /** Runs and resolves with the result. */
  runWithResult<T = unknown>(name: string, payload?: Record<string, unknown>, options?: RunOptions): Promise<T>;
  Pipeline: Record<string, never>;
}

/** Client.App.Tasks (the function catalog). */
export interface TasksApi {
  Functions: Record<string, never>;
}

export function createActionsApi(ctx: ClientContext): ActionsApi {
  return {
    ...createCrud(ctx),
    ...createRunner(ctx),
    getLogs: (options) => getLogs(ctx, options),
    Pipeline: {},
  };
}

export function createTasksApi(_ctx: ClientContext): TasksApi {
  return { Functions: {} };
}
