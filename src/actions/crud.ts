/** Client.App.Actions.{create, update, remove, get, publish}: validated here first, then by the backend. */
import type { ClientContext } from '../core/context.js';
import { ClientError } from '../http/errors.js';
import { loadChunk } from '../core/lazy.js';
import { actionsChanged } from '../storage/actions-cache.js';
import type { Action, ActionInput, ActionUpdate } from '../contract/actions.js';

export const tasksPath = (ctx: ClientContext, rest = '') => `v1/apps/${ctx.appId()}/tasks${rest}`;

export function checkIdOrName(idOrName: unknown, what = 'idOrName'): string {
  if (typeof idOrName === 'number' && Number.isInteger(idOrName) && idOrName > 0) return String(idOrName);
  if (typeof idOrName === 'string' && idOrName.trim() !== '') return encodeURIComponent(idOrName);
  throw new ClientError('INVALID_ARGUMENT', `${what} must be an action id (positive integer) or name (non-empty string)`);
}

/** Validates with src/contract/action-validate.ts, a lazy chunk of client.js (few screens create or change actions). */
async function assertValid(ctx: ClientContext, input: unknown, partial: boolean): Promise<void> {
  const { describeIssues, validateActionInput } = await loadChunk('validate', ctx.config().assetsUrl);
  const issues = validateActionInput(input, { partial });
  if (issues.length) throw new ClientError('INVALID_ACTION', describeIssues(issues), { issues });
}

export function createCrud(ctx: ClientContext) {
  return {
    /** Creates an action (unpublished; `active` defaults to true). */
    async create(definition: ActionInput): Promise<Action> {
      await assertValid(ctx, definition, false);
      const { action } = await ctx.http.request<{ action: Action }>('POST', tasksPath(ctx), { json: definition });
      await actionsChanged(ctx);
      return action;
    },
    /** Changes the working copy (and `name`, `active`); the published snapshot changes only on publish. */
    async update(idOrName: number | string, props: ActionUpdate): Promise<Action> {
      const target = checkIdOrName(idOrName);
      await assertValid(ctx, props, true);
      const { action } = await ctx.http.request<{ action: Action }>('PUT', tasksPath(ctx, `/${target}`), { json: props });
      await actionsChanged(ctx);
      return action;
    },
    async remove(idOrName: number | string): Promise<void> {
      await ctx.http.request('DELETE', tasksPath(ctx, `/${checkIdOrName(idOrName)}`));
      await actionsChanged(ctx);
    },
    /** Every action of the app (working copies), each with `lastRunAt` and `nextRunAt`. */
    async get(): Promise<Action[]> {
      const { actions } = await ctx.http.request<{ actions: Action[] }>('GET', tasksPath(ctx));
      return actions;
    },
    /** `true` copies the working copy to the published snapshot; `false` drops the snapshot. */
    async publish(actionId: number, isPublish: boolean): Promise<Action> {
      if (!Number.isInteger(actionId) || actionId <= 0) throw new ClientError('INVALID_ARGUMENT', 'actionId must be a positive integer');
      if (typeof isPublish !== 'boolean') throw new ClientError('INVALID_ARGUMENT', 'isPublish must be a boolean');
      const { action } = await ctx.http.request<{ action: Action }>('POST', tasksPath(ctx, `/${actionId}/publish`), { json: { publish: isPublish } });
      await actionsChanged(ctx);
      return action;
    },
  };
}
