/** Server-side validation of action bodies: the shared rules plus cron-parser, as HttpErrors. */
import { describeIssues, validateActionInput } from '../../contract/action-validate.js';
import type { ActionDefinition, ActionInput } from '../../contract/actions.js';
import { HttpError } from '../http/errors.js';
import { cronError } from './schedule.js';

const checkCron = (expression: string) => cronError(expression);

/** Throws 400 (wrong shape) or 422 (invalid meaning) naming every offending path. */
export function assertValidAction(body: unknown, partial: boolean, existing?: Partial<ActionInput>): void {
  const issues = validateActionInput(body, { partial, checkCron }, existing);
  if (!issues.length) return;
  const status = issues.every((i) => i.kind === 'meaning') ? 422 : 400;
  throw new HttpError(status, 'INVALID_ACTION', describeIssues(issues), { issues });
}

/** The stored definition of a create body (defaults filled in). */
export function definitionOf(input: Partial<ActionInput>, base?: ActionDefinition): ActionDefinition {
  return {
    frequency: input.frequency !== undefined ? input.frequency : (base?.frequency ?? null),
    timezone: input.timezone ?? base?.timezone ?? 'UTC',
    environment: input.environment ?? base?.environment ?? 'server',
    triggers: input.triggers ?? base?.triggers ?? [{ trigger: 'manual' }],
    functions: input.functions ?? base?.functions ?? [],
    pageId: input.pageId !== undefined ? input.pageId : (base?.pageId ?? null),
    missedRuns: input.missedRuns ?? base?.missedRuns ?? 'coalesce',
  };
}
