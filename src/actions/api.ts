import type { ClientContext } from '../core/context.js';

/** Client.App.Actions (filled in by the app actions issue). */
export interface ActionsApi {
  Pipeline: Record<string, never>;
}

/** Client.App.Tasks (the function catalog). */
export interface TasksApi {
  Functions: Record<string, never>;
}

export function createActionsApi(_ctx: ClientContext): ActionsApi {
  return { Pipeline: {} };
}

export function createTasksApi(_ctx: ClientContext): TasksApi {
  return { Functions: {} };
}
