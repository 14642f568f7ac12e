/**
 * Validation of action definitions, shared by the client (checked before any
 * request) and the backend (checked again, with cron-parser for `frequency`).
 * Every issue names the offending path, e.g. `functions[1].conditions[0].condition`.
 */
import { compilePartialFilter } from '../filter/partial.js';
import { MAX_DEFINITION_CHARS } from './action-limits.js';
import { RESERVED_ACTION_NAMES, type ActionInput } from './actions.js';
import { nodeIssues, type ValidationIssue } from './pipeline-nodes.js';

export type { ValidationIssue };

export interface ValidateOptions {
  /** `update`: fields may be missing; cross-field rules use `existing` for the missing ones. */
  partial?: boolean;
  /** Extra cron check (the backend passes cron-parser); returns an error message or undefined. */
  checkCron?: (expression: string) => string | undefined;
}

const ENVIRONMENTS = ['server', 'client', 'any'];
const TRIGGERS = ['log', 'schedule', 'manual', 'analytics'];
const MAX_NAME = 100;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A light five-field cron syntax check (fields, characters, numeric ranges); the backend also runs cron-parser. */
export function cronSyntaxError(expression: string): string | undefined {
  const fields = expression.trim().split(/\s+/);
  if (fields.length !== 5)
    return `must be a five-field cron expression (minute hour day-of-month month day-of-week), got ${fields.length} field${fields.length === 1 ? '' : 's'}`;
  const bounds: [number, number][] = [
    [0, 59],
    [0, 23],
    [1, 31],
    [1, 12],
    [0, 7],
  ];
  const names = ['minute', 'hour', 'day of month', 'month', 'day of week'];
  for (let i = 0; i < 5; i++) {
    const field = fields[i]!;
    if (!/^[0-9A-Za-z*?,/\-#]+$/.test(field)) return `${names[i]} field "${field}" has characters a cron field cannot hold`;
    for (const n of field.match(/\d+/g) ?? []) {
      const value = Number(n);
      const [lo, hi] = bounds[i]!;
      const isStep = new RegExp(`/${n}(?!\\d)`).test(field);
      if (!isStep && (value < lo || value > hi)) return `${names[i]} field "${field}": ${value} is outside ${lo}-${hi}`;
    }
  }
  return undefined;
}

/** Whether `zone` is an IANA time zone the runtime knows. */
export function isTimeZone(zone: string): boolean {
  if (zone.trim() === '') return false;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/** Checks an action name (create, update). */
export function nameIssue(name: unknown, path = 'name'): ValidationIssue | undefined {
  if (typeof name !== 'string' || name.trim() === '') return { path, message: 'is required and must be a non-empty string', kind: 'shape' };
  if (name !== name.trim()) return { path, message: 'must not start or end with spaces', kind: 'shape' };
  if (name.length > MAX_NAME) return { path, message: `must be at most ${MAX_NAME} characters`, kind: 'shape' };
  if (/^\d+$/.test(name)) return { path, message: 'must not be made only of digits (it would read as an id)', kind: 'meaning' };
  if (/[/?#]/.test(name)) return { path, message: 'must not contain "/", "?" or "#"', kind: 'meaning' };
  if ((RESERVED_ACTION_NAMES as readonly string[]).includes(name.toLowerCase()))
    return { path, message: `"${name}" is reserved (a route word: ${RESERVED_ACTION_NAMES.join(', ')})`, kind: 'meaning' };
  return undefined;
}

/**
 * Validates a create body (or, with `partial`, an update body merged over
 * `existing`). Returns every issue found; an empty array means valid.
 */
export function validateActionInput(input: unknown, options: ValidateOptions = {}, existing?: Partial<ActionInput>): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  if (!isObject(input)) return [{ path: '', message: 'the action definition must be an object', kind: 'shape' }];
  const partial = options.partial ?? false;
  const known = ['name', 'active', 'frequency', 'timezone', 'environment', 'triggers', 'functions', 'pageId', 'missedRuns'];
  const readOnly = ['id', 'appId', 'published', 'publishedAt', 'lastRunAt', 'nextRunAt', 'createdAt', 'updatedAt'];
  for (const key of Object.keys(input))
    if (!known.includes(key) && !readOnly.includes(key))
      issues.push({ path: key, message: `is not a field of an action (known: ${known.join(', ')})`, kind: 'shape' });

  if (!partial || input.name !== undefined) {
    const issue = nameIssue(input.name);
    if (issue) issues.push(issue);
  }
  if (input.active !== undefined && typeof input.active !== 'boolean') issues.push({ path: 'active', message: 'must be a boolean', kind: 'shape' });
  if (input.environment !== undefined && (typeof input.environment !== 'string' || !ENVIRONMENTS.includes(input.environment)))
    issues.push({ path: 'environment', message: `must be one of ${ENVIRONMENTS.join(', ')}`, kind: 'shape' });
  if (input.missedRuns !== undefined && input.missedRuns !== 'coalesce' && input.missedRuns !== 'skip')
    issues.push({ path: 'missedRuns', message: 'must be coalesce or skip', kind: 'shape' });
  if (input.pageId !== undefined && input.pageId !== null && !(Number.isInteger(input.pageId) && (input.pageId as number) > 0))
    issues.push({ path: 'pageId', message: 'must be a positive integer or null', kind: 'shape' });
  if (input.timezone !== undefined) {
    if (typeof input.timezone !== 'string') issues.push({ path: 'timezone', message: 'must be a string', kind: 'shape' });
    else if (!isTimeZone(input.timezone))
      issues.push({ path: 'timezone', message: `"${input.timezone}" is not an IANA time zone (e.g. Europe/Dublin)`, kind: 'meaning' });
  }
  if (input.frequency !== undefined && input.frequency !== null) {
    if (typeof input.frequency !== 'string') issues.push({ path: 'frequency', message: 'must be a cron string or null', kind: 'shape' });
    else {
      const message = cronSyntaxError(input.frequency) ?? options.checkCron?.(input.frequency);
      if (message) issues.push({ path: 'frequency', message, kind: 'meaning' });
    }
  }
  if (input.triggers !== undefined) {
    if (!Array.isArray(input.triggers)) issues.push({ path: 'triggers', message: 'must be an array of { trigger, where? }', kind: 'shape' });
    else
      input.triggers.forEach((t: unknown, i: number) => {
        const at = `triggers[${i}]`;
        if (!isObject(t)) return void issues.push({ path: at, message: 'must be an object { trigger, where? }', kind: 'shape' });
        if (typeof t.trigger !== 'string' || !TRIGGERS.includes(t.trigger))
          issues.push({ path: `${at}.trigger`, message: `must be one of ${TRIGGERS.join(', ')}`, kind: 'shape' });
        if (t.where !== undefined) {
          if (!isObject(t.where)) issues.push({ path: `${at}.where`, message: 'must be an object', kind: 'shape' });
          else if (t.trigger !== 'log' && t.trigger !== 'analytics')
            issues.push({ path: `${at}.where`, message: 'is only used by log and analytics triggers', kind: 'meaning' });
          else {
            try {
              compilePartialFilter(t.where, `${at}.where`);
            } catch (error) {
              issues.push({ path: `${at}.where`, message: `is not a valid query: ${(error as Error).message}`, kind: 'shape' });
            }
          }
        }
        for (const key of Object.keys(t))
          if (key !== 'trigger' && key !== 'where') issues.push({ path: `${at}.${key}`, message: 'is not a trigger field', kind: 'shape' });
      });
  }
  // Top-level nodes are level 1, as the engine counts (src/contract/action-limits.ts).
  if (input.functions !== undefined) nodeIssues(input.functions, 'functions', issues);
  if (issues.length) return issues;
  const size = JSON.stringify([input.functions ?? [], input.triggers ?? []]).length;
  if (size > MAX_DEFINITION_CHARS)
    issues.push({
      path: 'functions',
      message: `the definition (functions and triggers) is ${size} characters, more than ${MAX_DEFINITION_CHARS}`,
      kind: 'meaning',
    });
  if (issues.length) return issues;

  // Cross-field rules (design §5), on the merged result. A partial update checked without the stored action (on
  // the client) checks only the rules whose fields it carries; the backend checks the rest on the merged action.
  const merged = { ...(existing ?? {}), ...input } as ActionInput;
  const knows = (key: 'environment' | 'frequency') => !partial || existing !== undefined || key in input;
  const environment = knows('environment') ? (merged.environment ?? 'server') : undefined;
  (merged.triggers ?? []).forEach((t, i) => {
    if ((t.trigger === 'log' || t.trigger === 'schedule') && environment === 'client')
      issues.push({
        path: `triggers[${i}].trigger`,
        message: `a ${t.trigger} trigger runs on the server: environment must be server or any, not client`,
        kind: 'meaning',
      });
    if (t.trigger === 'analytics' && environment === 'server')
      issues.push({
        path: `triggers[${i}].trigger`,
        message: 'an analytics trigger runs on the device: environment must be client or any, not server',
        kind: 'meaning',
      });
    if (t.trigger === 'schedule' && knows('frequency') && (merged.frequency === undefined || merged.frequency === null))
      issues.push({ path: 'frequency', message: 'a schedule trigger needs a frequency (five-field cron)', kind: 'meaning' });
  });
  return issues;
}

/** One line naming the first issues, for error messages. */
export function describeIssues(issues: readonly ValidationIssue[]): string {
  const shown = issues.slice(0, 3).map((i) => (i.path ? `${i.path}: ${i.message}` : i.message));
  return `Invalid action: ${shown.join('; ')}${issues.length > 3 ? ` (and ${issues.length - 3} more)` : ''}`;
}
