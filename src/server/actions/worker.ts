/**
 * The worker loop: claims queued runs from the database (atomic, fair across apps, so several backends may
 * share one database), runs them on the run thread pool (or inline) under the time limit and writes exactly
 * one log record per run.
 */
import { randomUUID } from 'node:crypto';
import type { RunOutcome } from '../../contract/pipeline.js';
import type { ServerContext } from '../context.js';
import { executeRun } from './executor.js';
import type { RunHosts } from './host-services.js';
import type { RunPool } from './threads/pool.js';
import { insertLog } from './log-store.js';
import { capResult, failure, logResultOf, logTypeOf } from './outcome.js';
import { claimNextRun, countUnfinished, finishRun, releaseRun, requeueExpired, setRunLog, type RunRow } from './run-store.js';
import { touchLastRun } from './store.js';

export interface FinishedRun {
  runId: number;
  outcome: RunOutcome;
  logId: number;
  duration: number;
}

export interface WorkerOptions {
  /** The services runs reach (data sources, notifications). */
  hosts: RunHosts;
  /** Runs at the same time (default: the pool's size, else 4). */
  concurrency?: number;
  /** Where runs execute: the thread pool (it enforces the time limit itself); absent, on this thread. */
  pool?: RunPool;
  pollMs?: number;
  /** How long `stop()` waits for runs in flight before handing them back to the queue. */
  closeGraceMs?: number;
  onFinished?: (run: FinishedRun) => void;
}

export interface Worker {
  start(): void;
  /** Look at the queue now (after an enqueue). */
  wake(): void;
  /** Resolves once the queue is empty and nothing runs (tests). */
  drain(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
  readonly id: string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The engine enforces a run's time limit itself; this guard records a timeout even if the engine does not
 * return: `TIMEOUT` a second after the limit (then the run's signal is aborted), `ABORTED` when the signal is
 * aborted first (shutdown), else the run's own outcome.
 */
export function guardRun(run: Promise<RunOutcome>, limitMs: number, controller: AbortController, graceMs = 1000): Promise<RunOutcome> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<RunOutcome>((resolve) => {
    timer = setTimeout(() => {
      // Resolved before the abort, whose listener would otherwise record ABORTED first.
      resolve(failure('TimeoutError', 'TIMEOUT', `The run took longer than ${limitMs} ms and was stopped`, limitMs));
      controller.abort(new Error('timeout'));
    }, limitMs + graceMs);
    controller.signal.addEventListener('abort', () => resolve(failure('AbortError', 'ABORTED', 'The run was stopped')), { once: true });
  });
  return Promise.race([run, deadline]).finally(() => clearTimeout(timer));
}

export function createWorker(ctx: ServerContext, options: WorkerOptions): Worker {
  const id = `${ctx.instanceId}:worker-${randomUUID()}`;
  const pool = options.pool;
  const concurrency = options.concurrency ?? pool?.size ?? 4;
  const appConcurrency = ctx.limits.appConcurrency ?? Math.max(1, concurrency - 1);
  const maxAttempts = ctx.limits.runAttempts ?? 3;
  const pollMs = options.pollMs ?? 250;
  const inFlight = new Map<number, { promise: Promise<void>; controller: AbortController }>();
  let running = false;
  let closing = false;
  let wakeUp: (() => void) | undefined;
  let woken = false;
  const wake = () => {
    woken = true;
    wakeUp?.();
  };
  let loop: Promise<void> | undefined;
  let lastRequeue = 0;

  const leaseMs = () => ctx.limits.runLeaseMs ?? ctx.limits.runTimeoutMs + 60_000;

  async function finalize(run: RunRow, outcome: RunOutcome, duration: number, startedAt: string): Promise<void> {
    const logId = await ctx.db.transaction(
      async (tx) => {
        // One copy of a failure's trace in the run's row: readers take `error.trace`, else `trace`.
        const stored = outcome.ok || !outcome.error.trace.length ? outcome : { ...outcome, trace: outcome.error.trace, error: { ...outcome.error, trace: [] } };
        const owned = await finishRun(tx, run.id, id, outcome.ok ? 'succeeded' : 'failed', stored, ctx.nowIso());
        if (!owned) return undefined;
        const logId = await insertLog(tx, {
          type: logTypeOf(run.mode, outcome.ok),
          appId: run.appId,
          organizationId: run.organizationId,
          actionId: run.actionId,
          createdAt: ctx.nowIso(),
          data: {
            mode: run.mode,
            duration,
            actionId: run.actionId,
            result: logResultOf(outcome),
            runId: run.id,
            trigger: run.trigger,
            source: 'server',
            trace: outcome.trace,
          },
        });
        await setRunLog(tx, run.id, logId);
        return logId;
      },
      { isolation: 'read-committed' },
    ); // only rows this run owns (finishRun re-checks the claim): never retried

    // Outside the transaction: every run of an action writes this one row, and concurrent SERIALIZABLE
    // transactions writing the same row fail and retry (PostgreSQL); autocommitted, they only queue on its lock.
    if (logId !== undefined) await touchLastRun(ctx.db, run.actionId, startedAt);
    if (logId !== undefined) options.onFinished?.({ runId: run.id, outcome, logId, duration });
  }

  async function process(run: RunRow, controller: AbortController): Promise<void> {
    const startedAt = ctx.nowIso();
    const started = performance.now();
    let outcome: RunOutcome;
    try {
      if (run.attempts > maxAttempts)
        // Claimed again and again (its instance died each time, e.g. killed by this very run): not run again.
        outcome = failure('WorkerError', 'RUN_ABANDONED', `The run was claimed ${run.attempts - 1} times without finishing; it is not run again`);
      else if (pool) outcome = await executeRun(ctx, options.hosts, run, controller.signal, pool);
      else outcome = await guardRun(executeRun(ctx, options.hosts, run, controller.signal), ctx.limits.runTimeoutMs, controller);
    } catch (error) {
      outcome = failure((error as Error)?.name || 'Error', 'RUN_FAILED', (error as Error)?.message ?? String(error));
    }
    if (closing && controller.signal.aborted) {
      // Handed back at shutdown: another start (or instance) runs it again, and only that run logs.
      await releaseRun(ctx.db, run.id, id).catch(() => undefined);
      return;
    }
    outcome = capResult(outcome, ctx.limits.resultBytes);
    await finalize(run, outcome, Math.round(performance.now() - started), startedAt);
  }

  async function claimMore(): Promise<boolean> {
    let claimed = false;
    // Leases are about process liveness, so they use real time (a test's fake clock may jump by days).
    if (Date.now() - lastRequeue > 5000) {
      lastRequeue = Date.now();
      await requeueExpired(ctx.db, new Date().toISOString());
    }
    while (running && inFlight.size < concurrency) {
      const run = await claimNextRun(ctx.db, id, ctx.nowIso(), new Date(Date.now() + leaseMs()).toISOString(), appConcurrency);
      if (!run) break;
      claimed = true;
      const controller = new AbortController();
      const promise = process(run, controller)
        .catch((error) => console.error('[in-app-runtime server] run %d could not be recorded', run.id, error))
        .finally(() => {
          inFlight.delete(run.id);
          wake();
        });
      inFlight.set(run.id, { promise, controller });
    }
    return claimed;
  }

  async function runLoop(): Promise<void> {
    while (running) {
      try {
        await claimMore();
      } catch (error) {
        if (!running) return;
        console.error('[in-app-runtime server] worker loop failed', error);
      }
      // A wake-up that came while claiming (a run queued or finished meanwhile) is not lost: look again at once.
      if (woken) {
        woken = false;
        continue;
      }
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, pollMs);
        wakeUp = () => {
          clearTimeout(t);
          resolve();
        };
      });
      wakeUp = undefined;
      woken = false;
    }
  }

  return {
    id,
    start() {
      if (running) return;
      running = true;
      loop = runLoop();
    },
    wake,
    async drain(timeoutMs = 30_000) {
      const end = Date.now() + timeoutMs;
      for (;;) {
        wakeUp?.();
        if (inFlight.size === 0 && (await countUnfinished(ctx.db)) === 0) return;
        if (Date.now() > end) throw new Error('drain: runs still unfinished');
        await sleep(10);
      }
    },
    async stop() {
      if (!running) return;
      running = false;
      wakeUp?.();
      await loop;
      const pending = [...inFlight.values()];
      if (pending.length) {
        const grace = sleep(options.closeGraceMs ?? 2000).then(() => 'grace');
        const done = Promise.all(pending.map((p) => p.promise)).then(() => 'done');
        if ((await Promise.race([grace, done])) === 'grace') {
          closing = true;
          for (const p of inFlight.values()) p.controller.abort(new Error('closing'));
          await Promise.all([...inFlight.values()].map((p) => p.promise));
        }
      }
    },
  };
}
