/** The background parts of app actions in one backend: worker loop, scheduler timer, log-trigger listener. */
import type { ServerContext } from '../context.js';
import { dispatchLogEvent } from './log-triggers.js';
import { createRunWaiters, type RunWaiters } from './runs.js';
import { schedulerTick, type TickReport } from './scheduler.js';
import { availableParallelism } from 'node:os';
import { createRunPool, type RunPool } from './threads/pool.js';
import { createWorker, type Worker } from './worker.js';
import type { RunHosts } from './host-services.js';

export interface ActionsRuntime {
  worker: Worker;
  /** The run threads (absent with `limits.runThreads: 0`: runs execute on the HTTP thread). */
  pool: RunPool | undefined;
  waiters: RunWaiters;
  /** Starts the worker loop, the scheduler timer and the log-trigger listener (once; stopped by the server's close). */
  start(): void;
  /** Runs the scheduler once at `ctx.clock()` and wakes the worker. */
  tick(): Promise<TickReport>;
  /** Resolves once every queued run has finished (tests). */
  drain(timeoutMs?: number): Promise<void>;
  /** Resolves once the log events emitted so far have been dispatched (tests). */
  settled(): Promise<void>;
}

/**
 * The actions runtime of a backend, built by startServer (server/services.ts) with the services runs reach.
 * Building it starts nothing; `start()` starts the worker loop, the scheduler timer and the log-trigger listener,
 * and registers their stop with the server's close.
 */
export function createActionsRuntime(ctx: ServerContext, hosts: RunHosts, options: { schedulerIntervalMs?: number } = {}): ActionsRuntime {
  const waiters = createRunWaiters();
  const threads = ctx.limits.runThreads ?? availableParallelism();
  // Threads start when the first run needs one (threads/pool.ts).
  const pool =
    threads > 0 ? createRunPool({ size: threads, memoryMb: ctx.limits.runThreadMemoryMb ?? 256, niceness: ctx.limits.runThreadNiceness }) : undefined;
  const worker = createWorker(ctx, { hosts, pool, onFinished: (run) => waiters.notify(run.runId) });
  const pending = new Set<Promise<unknown>>();
  let ticking: Promise<TickReport> | undefined;
  let started = false;

  const tick = async (): Promise<TickReport> => {
    // One pass at a time in this process (the database claim makes it safe across processes).
    while (ticking) await ticking.catch(() => undefined);
    ticking = schedulerTick(ctx);
    try {
      const report = await ticking;
      if (report.queued.length) worker.wake();
      return report;
    } finally {
      ticking = undefined;
    }
  };

  const start = () => {
    if (started) return;
    started = true;
    const unsubscribe = ctx.bus.on((event) => {
      const p = dispatchLogEvent(ctx, event)
        .then((ids) => ids.length && worker.wake())
        .catch((error) => console.error('[in-app-runtime server] log trigger dispatch failed', error))
        .finally(() => pending.delete(p));
      pending.add(p);
      return p.then(() => undefined);
    });
    // `RunningServer.tick()` runs the scheduler once at the current (possibly fake) clock.
    ctx.onTick(async () => {
      await tick();
    });
    worker.start();
    const interval = setInterval(() => void tick().catch(() => undefined), options.schedulerIntervalMs ?? 1000);
    interval.unref?.();
    // Occurrences missed while the backend was down are handled at start-up.
    void tick().catch(() => undefined);
    ctx.onClose(async () => {
      clearInterval(interval);
      unsubscribe();
      await Promise.allSettled([...pending]);
      await ticking?.catch(() => undefined);
      await worker.stop();
      await pool?.close();
    });
  };

  const runtime: ActionsRuntime = {
    worker,
    pool,
    waiters,
    start,
    tick,
    drain: async (timeoutMs) => {
      await runtime.settled();
      await worker.drain(timeoutMs);
    },
    settled: async () => {
      // Bus listeners start on a microtask; let them begin, then wait for them.
      await new Promise((r) => setTimeout(r, 0));
      await Promise.allSettled([...pending]);
    },
  };
  return runtime;
}
