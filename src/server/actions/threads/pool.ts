/**
 * The run thread pool: server runs execute off the HTTP event loop, one run at a time per `worker_threads`
 * thread, each thread with its own QuickJS module (thread.ts). The messages are those of the browser's engine
 * Worker (src/pipeline/worker-protocol.ts): the pool posts a run, answers the thread's host-service calls with
 * the run's services on this thread (one owner of the database connection), and gets the outcome.
 *
 * Containment: a thread that crashes or passes its heap limit (`resourceLimits`) fails only its own run
 * (WORKER_CRASHED, WORKER_OUT_OF_MEMORY) and is replaced by a fresh one on the next run. A thread that does not
 * answer within `graceMs` of its run's time limit, or of an abort, is terminated (TIMEOUT, ABORTED).
 */
import { Worker } from 'node:worker_threads';
import type { RunOutcome, RunPipelineOptions } from '../../../contract/pipeline.js';
import { DEFAULT_PIPELINE_LIMITS } from '../../../pipeline/limits.js';
import { answerCall, plain, serializeError, type PageToWorker, type WorkerRunOptions, type WorkerToPage } from '../../../pipeline/worker-protocol.js';
import { threadExecArgv } from '../../../pipeline/thread-argv.js';
import { loadWasmModule } from '../../../sandbox/wasm.js';
import { layoutOf } from '../../../sandbox/wasm-layout.js';
import { failure } from '../outcome.js';
import { THREAD_ENTRY } from './entry-url.js';

export interface RunPoolOptions {
  /** Threads (runs at the same time). */
  size: number;
  /** Heap limit of one thread, MB (`resourceLimits.maxOldGenerationSizeMb`). QuickJS's own memory is capped per run besides. */
  memoryMb: number;
  /** How long a thread may take to answer after its run's time limit or an abort before it is terminated (default 1000 ms). */
  graceMs?: number;
  /** Niceness a thread adds to its own on Linux, so the HTTP thread keeps the CPU (default 10; 0: none; priority.ts). */
  niceness?: number;
  /** Where a thread starts (default: entry-url.ts). */
  entry?: URL;
}

export interface RunPool {
  readonly size: number;
  /** Runs a pipeline on a free thread (waiting for one when all are busy). Never rejects: failures are outcomes. */
  runPipeline(options: RunPipelineOptions): Promise<RunOutcome>;
  /** Threads alive now, with what they run (tests and diagnostics). */
  threads(): { threadId: number; busy: boolean; memoryImages: boolean; restores: number }[];
  /** Terminates every thread; runs in flight end with ABORTED. */
  close(): Promise<void>;
}

interface Active {
  id: number;
  options: RunPipelineOptions;
  resolve: (outcome: RunOutcome) => void;
  started: number;
  timers: ReturnType<typeof setTimeout>[];
  detach: () => void;
  /** Aborted when the run ends: its host calls still in flight (an outbound request) are cancelled. */
  calls: AbortController;
  /** Per http call, cancelled by the thread (its node's time is up). */
  cancels: Map<number, AbortController>;
}

interface Thread {
  worker: Worker;
  /** Resolves once the thread has warmed up (false: it died first). */
  ready: Promise<boolean>;
  active?: Active;
  dead: boolean;
  /** Its runs are put back from memory images (said by the thread once warmed). */
  memoryImages: boolean;
  /** Sandboxes it put back from an image so far (said with each outcome). */
  restores: number;
}

const messageOf = (error: unknown) => (error as Error)?.message ?? String(error);

export function createRunPool(options: RunPoolOptions): RunPool {
  const size = Math.max(1, Math.floor(options.size));
  const graceMs = options.graceMs ?? 1000;
  const threads = new Set<Thread>();
  const idle: Thread[] = [];
  const waiting: ((thread: Thread | undefined) => void)[] = [];
  let seq = 0;
  let closed = false;

  const post = (thread: Thread, message: PageToWorker) => {
    if (!thread.dead) thread.worker.postMessage(message);
  };

  /** Ends the thread's run with `outcome`; a live thread goes to the next waiting run or back to idle. */
  function settle(thread: Thread, outcome: RunOutcome): void {
    const active = thread.active;
    if (!active) return;
    thread.active = undefined;
    for (const t of active.timers) clearTimeout(t);
    active.detach();
    active.calls.abort(new Error('The run has ended'));
    active.resolve({ ...outcome, durationMs: outcome.durationMs || Math.round(performance.now() - active.started) });
    if (!thread.dead) release(thread);
  }

  function release(thread: Thread): void {
    const next = waiting.shift();
    if (next) next(thread);
    else idle.push(thread);
  }

  /** Takes a thread out of the pool for good: its run (if any) ends with `outcome`; a waiting run gets a new thread. */
  function discard(thread: Thread, outcome: RunOutcome): void {
    if (thread.dead) return;
    thread.dead = true;
    threads.delete(thread);
    const at = idle.indexOf(thread);
    if (at >= 0) idle.splice(at, 1);
    void thread.worker.terminate().catch(() => undefined);
    settle(thread, outcome);
    if (!closed && waiting.length) {
      const next = waiting.shift()!;
      void spawn().then(next);
    }
  }

  /** A started thread, or undefined when it could not start (never rejects: callers use it without a catch). */
  async function spawn(): Promise<Thread | undefined> {
    let worker: Worker;
    try {
      worker = new Worker(options.entry ?? THREAD_ENTRY, {
        name: 'in-app-runtime run thread',
        resourceLimits: { maxOldGenerationSizeMb: options.memoryMb },
        workerData: { niceness: options.niceness },
        execArgv: threadExecArgv(process.execArgv),
        stdout: false,
        stderr: false,
      });
    } catch (error) {
      console.error('[in-app-runtime server] a run thread could not start', error);
      return undefined;
    }
    worker.unref();
    let markReady!: (ok: boolean) => void;
    const thread: Thread = { worker, dead: false, memoryImages: false, restores: 0, ready: new Promise((r) => (markReady = r)) };
    threads.add(thread);
    worker.on('message', (message: WorkerToPage) => {
      if (message.type === 'warmed') {
        thread.memoryImages = message.memoryImages;
        return markReady(true);
      }
      const active = thread.active;
      if (!active || message.id !== active.id) return;
      if (message.type === 'done') {
        thread.restores = Number(message.restores) || 0;
        return settle(thread, message.outcome);
      }
      if (message.type === 'cancel') return active.cancels.get(message.callId)?.abort(new Error('The node timed out'));
      const cancel = new AbortController();
      active.cancels.set(message.callId, cancel);
      const done = () => active.cancels.delete(message.callId);
      const reply = (answer: { ok: true; value: unknown } | { ok: false; error: unknown }) => {
        if (thread.active !== active) return;
        const base = { type: 'reply', id: message.id, callId: message.callId } as const;
        try {
          post(thread, answer.ok ? { ...base, ok: true, value: plain(answer.value) } : { ...base, ok: false, error: serializeError(answer.error) });
        } catch (error) {
          // An answer that cannot cross (nested too deep to clone, say) fails the call, not the whole thread.
          post(thread, { ...base, ok: false, error: serializeError(new Error(`The answer cannot be passed to the run: ${messageOf(error)}`)) });
        }
      };
      answerCall(active.options.services, message, AbortSignal.any([active.calls.signal, cancel.signal]))
        .finally(done)
        .then(
          (value) => reply({ ok: true, value }),
          (error: unknown) => reply({ ok: false, error }),
        );
    });
    worker.on('error', (error: Error & { code?: string }) => {
      markReady(false);
      const outOfMemory = error.code === 'ERR_WORKER_OUT_OF_MEMORY';
      discard(
        thread,
        outOfMemory
          ? failure('OutOfMemoryError', 'WORKER_OUT_OF_MEMORY', `The run's thread passed its memory limit (${options.memoryMb} MB) and was stopped`)
          : failure('WorkerError', 'WORKER_CRASHED', `The run's thread crashed: ${messageOf(error)}`),
      );
    });
    worker.on('exit', (code) => {
      markReady(false);
      discard(thread, failure('WorkerError', 'WORKER_CRASHED', `The run's thread exited (code ${code})`));
    });
    const wasmModule = await loadWasmModule().catch(() => undefined);
    // The thread gets the layout read here from the bytes (wasm.ts), so its runs are put back from memory images.
    post(thread, { type: 'warm', wasmModule, wasmLayout: wasmModule && layoutOf(wasmModule) });
    return (await thread.ready) ? thread : undefined;
  }

  /** Keeps one started thread in reserve while the pool is not full, so the next run does not wait for a start. */
  function prewarm(): void {
    if (closed || idle.length > 0 || threads.size >= size) return;
    void spawn().then((thread) => thread && !thread.dead && release(thread));
  }

  /** A free thread: an idle one, a new one while the pool is not full, else the next one released. */
  async function acquire(): Promise<Thread | undefined> {
    const free = idle.pop();
    if (free) {
      prewarm();
      return free;
    }
    if (threads.size < size) {
      const started = spawn(); // counted in `threads` at once
      prewarm();
      return started;
    }
    return new Promise((resolve) => waiting.push(resolve));
  }

  return {
    size,
    threads: () => [...threads].map((t) => ({ threadId: t.worker.threadId, busy: t.active !== undefined, memoryImages: t.memoryImages, restores: t.restores })),
    async runPipeline(runOptions) {
      const started = performance.now();
      const { services: _services, signal, ...rest } = runOptions;
      if (closed) return failure('AbortError', 'ABORTED', 'The backend is closing');
      let data: WorkerRunOptions;
      try {
        data = plain(rest) as WorkerRunOptions;
      } catch (error) {
        return failure('ValidationError', 'INVALID_PAYLOAD', `The run cannot be passed to its thread as JSON: ${messageOf(error)}`);
      }
      let thread = await acquire();
      // A thread that died while starting (a broken entry, out of memory at load): one more try, then the run fails.
      if (!thread && !closed) thread = await acquire();
      if (!thread) return failure('WorkerError', 'WORKER_CRASHED', 'No run thread could start');
      if (signal?.aborted) {
        release(thread);
        return failure('AbortError', 'ABORTED', 'The run was stopped before it started');
      }
      const limitMs = runOptions.limits?.runTimeoutMs ?? DEFAULT_PIPELINE_LIMITS.runTimeoutMs;
      const id = ++seq;
      const target = thread;
      return new Promise<RunOutcome>((resolve) => {
        const active: Active = {
          id,
          options: runOptions,
          resolve,
          started,
          timers: [],
          detach: () => undefined,
          calls: new AbortController(),
          cancels: new Map(),
        };
        const stop = (outcome: () => RunOutcome) => {
          if (target.active !== active) return;
          discard(target, outcome());
        };
        // The thread stops a spinning run itself (QuickJS interrupt handler); one that does not answer is terminated.
        active.timers.push(
          setTimeout(
            () => stop(() => failure('TimeoutError', 'TIMEOUT', `The run took longer than ${limitMs} ms; its thread did not answer and was stopped`, limitMs)),
            limitMs + graceMs,
          ),
        );
        const onAbort = () => {
          post(target, { type: 'abort', id });
          active.timers.push(setTimeout(() => stop(() => failure('AbortError', 'ABORTED', 'The run was stopped')), graceMs));
        };
        signal?.addEventListener('abort', onAbort, { once: true });
        active.detach = () => signal?.removeEventListener('abort', onAbort);
        target.active = active;
        try {
          post(target, { type: 'run', id, options: data, hasHttp: typeof runOptions.services.http === 'function' });
        } catch (error) {
          // Never sent (e.g. a definition nested too deep to clone): the run fails and its thread is free at once.
          settle(target, failure('ValidationError', 'INVALID_PAYLOAD', `The run cannot be passed to its thread: ${messageOf(error)}`));
        }
      });
    },
    async close() {
      closed = true;
      for (const next of waiting.splice(0)) next(undefined);
      const all = [...threads];
      for (const thread of all) discard(thread, failure('AbortError', 'ABORTED', 'The backend closed during the run'));
      await Promise.all(all.map((t) => t.worker.terminate().catch(() => undefined)));
    },
  };
}
