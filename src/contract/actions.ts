import type { PipelineNode, TraceEntry } from './pipeline.js';

/** Where an action runs (spec environment rules). */
export type ActionEnvironment = 'server' | 'client' | 'any';
export type TriggerKind = 'log' | 'schedule' | 'manual' | 'analytics';
/** What the scheduler does with occurrences missed while the backend was down. */
export type MissedRunsPolicy = 'coalesce' | 'skip';

export interface ActionTrigger {
  trigger: TriggerKind;
  /** Partial-document filter (log and analytics triggers). */
  where?: Record<string, unknown>;
}

/** The versioned part of an action: what `publish` copies into the published snapshot. */
export interface ActionDefinition {
  frequency: string | null;
  timezone: string;
  environment: ActionEnvironment;
  triggers: ActionTrigger[];
  functions: PipelineNode[];
  /** A screen whose registered `Client.Page.onRemoteExecution` handler the action runs. */
  pageId: number | null;
  missedRuns: MissedRunsPolicy;
}

/** Input of `create`. Only `name` is required. */
export interface ActionInput {
  name: string;
  active?: boolean;
  frequency?: string | null;
  timezone?: string;
  environment?: ActionEnvironment;
  triggers?: ActionTrigger[];
  functions?: PipelineNode[];
  pageId?: number | null;
  missedRuns?: MissedRunsPolicy;
}

/** Input of `update`: any field of `create`. */
export type ActionUpdate = Partial<ActionInput>;

/** An action as the backend returns it (working copy, or the copy of the requested environment). */
export interface Action extends ActionDefinition {
  id: number;
  appId: number;
  name: string;
  /** An inactive action never runs (applies at once, to both copies). */
  active: boolean;
  /** Whether a published snapshot exists. */
  published: boolean;
  publishedAt: string | null;
  lastRunAt: string | null;
  nextRunAt: string | null;
  createdAt: string;
  updatedAt: string;
}

export type LogMode = 'on-demand' | 'scheduled';
export type ActionLogType = 'app.action.completed' | 'app.task.completed' | 'app.task.failed';

export interface RunFailure {
  errorType: string;
  errorMessage: string;
  code?: string;
  trace: TraceEntry[];
}

/** One record per run (spec "App action log record"). */
export interface ActionLog {
  /** Backend id; null for a device record not uploaded yet. */
  id: number | null;
  createdAt: string;
  type: ActionLogType | 'app.task.skipped';
  data: {
    mode: LogMode;
    duration: number;
    actionId: number;
    result: unknown;
    /** Where the run happened. */
    source?: 'server' | 'device';
    runId?: number;
    /** Every node's path, package, start, duration, outcome, retries, input and output (docs/pipeline.md "Trace"). */
    trace?: TraceEntry[];
    [key: string]: unknown;
  };
  /** Set on records written by a device (dedupes uploads). */
  deviceKey?: string;
}

export interface GetLogsOptions {
  /** Only records of this action. */
  id?: number;
  /** Only the record of this run: a server run id (the `runId` of `run()`), or a device run id (`dev-…`). */
  runId?: RunId;
  /** Most records returned (default 50, at most 1000). */
  limit?: number;
  /** A sift query on the record, e.g. `{ type: 'app.task.failed' }` or `{ 'data.mode': 'scheduled' }`. */
  where?: Record<string, unknown>;
  /**
   * Include each record's `data.trace` (left out by default: a trace can hold up to 256 KB of node values;
   * `getRun` reads one run's). With it, `limit` is at most 100.
   */
  trace?: boolean;
}

export interface LogsPage {
  /** Number of records matching (before `limit`). */
  count: number;
  logs: ActionLog[];
}

/**
 * The id of a run: a positive integer for a server run (the backend's `runId`), `dev-<uuid>` for a run on a
 * device (the `deviceKey` of its log record), `queued:<Idempotency-Key>` for a server run queued on a device
 * while offline and not yet sent (docs/actions.md "Run handles").
 */
export type RunId = number | string;

/**
 * Where a run stands: `queued-offline` (stored on this device, sent when back online), `queued` (on the
 * backend's queue), `running`, `completed`, `failed`.
 */
export type RunStatus = 'queued-offline' | 'queued' | 'running' | 'completed' | 'failed';

/** What `run()` resolves with: enough to follow the run with `getRun(runId)`. */
export interface RunHandle {
  runId: RunId;
  status: RunStatus;
  /** The `Idempotency-Key` the run was (or will be) sent with (server runs). */
  idempotencyKey?: string;
}

/**
 * What `getRun` takes besides a bare run id: a run handle (what `run()` resolved with, or the `details` of a
 * `RUN_PENDING` error), kept whole, e.g. across a page reload, so that its `idempotencyKey` goes along.
 */
export type RunRef = Pick<RunHandle, 'runId'> & { idempotencyKey?: string };

/** A run's error (failed runs). */
export interface RunError {
  code: string;
  errorType: string;
  errorMessage: string;
}

/** One run as `getRun` and `GET tasks/runs/:runId` answer it. */
export interface RunInfo {
  runId: RunId;
  actionId: number | null;
  /** The action's name, when it still exists. */
  actionName?: string;
  source: 'server' | 'device';
  status: RunStatus;
  /** When it was queued (server), made (offline queue) or started (device). */
  queuedAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  durationMs: number | null;
  /** Times a server worker took it (more than 1 after a worker vanished mid-run). */
  attempts?: number;
  /** The result of a completed run. */
  result?: unknown;
  /** The error of a failed run. */
  error?: RunError;
  /** One entry per node that ran (empty until the run ends). */
  trace: TraceEntry[];
  /** The id of its log record, once written on the backend. */
  logId: number | null;
}

/** Device run ids: `dev-` then a random UUID (the `deviceKey` of the run's log record). */
export const DEVICE_RUN_PREFIX = 'dev-';
/** Ids of server runs queued offline: `queued:` then their Idempotency-Key. */
export const QUEUED_RUN_PREFIX = 'queued:';

/** Words that follow `tasks/` in routes and so cannot be action names. */
export const RESERVED_ACTION_NAMES = ['logs', 'functions', 'runs'] as const;
export const DEFAULT_LOG_LIMIT = 50;
export const MAX_LOG_LIMIT = 1000;
/** Most records of a getLogs answer that includes traces. */
export const MAX_TRACE_LOG_LIMIT = 100;
export const LOG_TYPES: readonly ActionLogType[] = ['app.action.completed', 'app.task.completed', 'app.task.failed'];
