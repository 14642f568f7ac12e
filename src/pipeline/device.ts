/**
 * Loads the pipeline engine on the device (design §1): in a browser, a module Web Worker
 * started from the engine chunk (`engine-<hash>.mjs`) next to client.js (or `config.assetsUrl`), so a long run never
 * blocks the page; the QuickJS `.wasm` next to it is fetched when the first pipeline runs.
 * Where Workers are unavailable (Node, happy-dom, some webviews) the same engine runs inline.
 */
import { assetsFolder, chunkUrl } from '../core/lazy.js';
import { CHUNKS_BUNDLED as ENGINE_IS_BUNDLED, importChunk } from '../core/lazy-import.js';
import { WASM_FILE } from './asset-names.js';
import { fetchWasmBytes } from '../sandbox/fetch-wasm.js';
import type { RunOutcome, RunPipelineOptions } from '../contract/pipeline.js';
import { answerCall, plain, serializeError, type PageToWorker, type WorkerRunOptions, type WorkerToPage } from './worker-protocol.js';
import { startNodeWorker, type WorkerLike } from './node-worker.js';

export interface Engine {
  runPipeline(options: RunPipelineOptions): Promise<RunOutcome>;
  /** `worker` or `inline`. */
  readonly mode: 'worker' | 'inline';
}

export interface DeviceEngineOptions {
  /** Folder URL of the engine chunk and the QuickJS wasm (default: the folder of the client.js script). */
  assetsUrl?: string;
  logger?: { once(key: string, message: string): void };
  /** Run inline even where Workers exist. */
  inline?: boolean;
}

export { ENGINE_FILE, WASM_FILE } from './asset-names.js';

const engines = new Map<string, Promise<Engine>>();
/** Cache keys whose engine Worker failed to start: their runs stay inline for the life of the page. */
const workerFailed = new Set<string>();

export function loadDeviceEngine(options: DeviceEngineOptions = {}): Promise<Engine> {
  const folder = assetsFolder(options.assetsUrl);
  const key = `${folder ?? ''}|${options.inline ? 'inline' : ''}`;
  let engine = engines.get(key);
  if (!engine) {
    const created: Promise<Engine> = createEngine(folder, options, key).catch((error: unknown) => {
      if (engines.get(key) === created) engines.delete(key);
      throw error;
    });
    engines.set(key, created);
    engine = created;
  }
  return engine;
}

async function createEngine(folder: string | undefined, options: DeviceEngineOptions, key: string): Promise<Engine> {
  const engineUrl = chunkUrl('engine', folder);
  const wasmUrl = folder ? new URL(WASM_FILE, folder).href : undefined;
  const isBrowser = typeof (globalThis as { document?: unknown }).document !== 'undefined' && !(globalThis as { happyDOM?: unknown }).happyDOM;
  // The engine Worker (thread) could not start, or died: later runs, and those it had not begun, run inline.
  const onDead = (reason: string) => {
    workerFailed.add(key);
    engines.delete(key);
    options.logger?.once('engine.worker', `The pipeline engine Worker could not start (${reason}): pipelines run inline`);
    return loadDeviceEngine(options);
  };
  if (workerFailed.has(key)) {
    // Said once already, when the Worker failed.
  } else if (!options.inline && !ENGINE_IS_BUNDLED && isBrowser && typeof Worker === 'function' && engineUrl) {
    try {
      const [worker, url] = browserWorker(engineUrl);
      return workerEngine(worker, wasmUrl, url, onDead);
    } catch {
      options.logger?.once('engine.worker', 'Web Workers are unavailable here: pipelines run on the page');
    }
  } else if (ENGINE_IS_BUNDLED && !options.inline && !isBrowser) {
    // Node (the npm client, also under happy-dom): a worker thread, so a long run never blocks the host's event loop.
    // (Not in client.js, where the engine is not bundled: constant-folded away with node-worker.browser.ts.)
    const worker = startNodeWorker();
    if (worker) return workerEngine(worker, wasmUrl, 'the engine thread', onDead);
  } else if (!ENGINE_IS_BUNDLED || isBrowser) {
    options.logger?.once('engine.inline', 'No Web Worker here: pipelines run inline');
  }
  const module = await importChunk('engine', engineUrl);
  if (wasmUrl && (isBrowser || !ENGINE_IS_BUNDLED)) module.configureWasm(wasmUrl);
  return { mode: 'inline', runPipeline: (o) => module.runPipeline(o) };
}

const failedOutcome = (errorType: string, code: string, errorMessage: string, started: number): RunOutcome => ({
  ok: false,
  error: { errorType, errorMessage, code, trace: [] },
  trace: [],
  durationMs: performance.now() - started,
});

interface WorkerRun {
  resolve: (o: RunOutcome | Promise<RunOutcome>) => void;
  options: RunPipelineOptions;
  started: number;
  /** The worker has asked the page for a host service: the run may have had effects, so it is never run again. */
  touched: boolean;
  /** Removes the run's abort listener. */
  detach: () => void;
}

/**
 * The engine in a module Worker. When the Worker fails to start (a load or script error, or an error it
 * does not handle), it is terminated and marked dead: `onDead` (once) drops it from the cache and gives
 * the inline engine. Runs that had not yet called a host service (so had no effect) run again inline,
 * the others fail with ENGINE_UNAVAILABLE, and later runs go straight to the inline engine.
 */
/** The engine chunk as a module Web Worker, and the URL it was started from (a blob URL to revoke when it dies). */
function browserWorker(engineUrl: string): [WorkerLike, string] {
  const origin = (globalThis as { location?: { origin?: string } }).location?.origin;
  // A cross-origin script (client.js on a CDN) cannot be a Worker directly: a same-origin blob imports it.
  const url =
    origin !== undefined && new URL(engineUrl).origin === origin
      ? engineUrl
      : URL.createObjectURL(new Blob([`import ${JSON.stringify(engineUrl)};`], { type: 'text/javascript' }));
  return [new Worker(url, { type: 'module', name: 'in-app-runtime pipeline engine' }) as unknown as WorkerLike, url];
}

/** `url`: where the worker started from (named when it fails; a blob: URL is revoked then). */
function workerEngine(worker: WorkerLike, wasmUrl: string | undefined, url: string, onDead: (reason: string) => Promise<Engine>): Engine {
  // The wasm downloads and compiles on the page while the Worker starts and imports the engine; the compiled
  // Module goes with the first run. Where the page cannot compile it (e.g. a CSP without 'wasm-unsafe-eval'),
  // the Worker fetches it itself from wasmUrl.
  const wasm = wasmUrl ? fetchWasmBytes(wasmUrl).catch(() => undefined) : Promise.resolve(undefined);
  // Posted before any run (runs are posted once the same promise settles): the Worker warms QuickJS up with it.
  // Its bytes go too (a Module's cannot be read back): the Worker reads its memory layout from them (memory images).
  void wasm.then((w) => worker.postMessage({ type: 'warm', wasmUrl, wasmModule: w?.module, wasmBytes: w?.bytes } satisfies PageToWorker));
  const runs = new Map<number, WorkerRun>();
  let seq = 0;
  let fallback: Promise<Engine> | undefined;
  let deadReason: string | undefined;
  const post = (message: PageToWorker) => worker.postMessage(message);

  const finish = (id: number, outcome: RunOutcome) => {
    const run = runs.get(id);
    if (!run) return;
    runs.delete(id);
    run.detach();
    run.resolve(outcome);
  };

  /** Runs `options` on the inline fallback engine (a failed load of it fails the run). */
  const runInline = (options: RunPipelineOptions, started: number): Promise<RunOutcome> =>
    fallback!.then(
      (engine) => engine.runPipeline(options),
      (error: unknown) =>
        failedOutcome(
          'EngineError',
          'ENGINE_UNAVAILABLE',
          `The pipeline engine could not start: ${deadReason}; nor inline: ${(error as Error)?.message ?? String(error)}`,
          started,
        ),
    );

  worker.addEventListener('message', (event: { data: WorkerToPage }) => {
    // `warmed` has no run; `cancel` never comes (no http service here, so no call of it to cancel).
    const message = event.data as Exclude<WorkerToPage, { type: 'warmed' | 'cancel' }>;
    const run = runs.get(message.id);
    if (!run) return;
    if (message.type === 'done') {
      finish(message.id, message.outcome);
      return;
    }
    run.touched = true;
    answerCall(run.options.services, message).then(
      (value) => post({ type: 'reply', id: message.id, callId: message.callId, ok: true, value: plain(value) }),
      (error: unknown) => post({ type: 'reply', id: message.id, callId: message.callId, ok: false, error: serializeError(error) }),
    );
  });
  worker.addEventListener('error', (event) => {
    if (deadReason !== undefined) return;
    deadReason = event.message || `${url} did not load`;
    worker.terminate();
    if (url.startsWith('blob:')) URL.revokeObjectURL(url);
    fallback = onDead(deadReason);
    fallback.catch(() => undefined);
    for (const [id, run] of [...runs]) {
      if (run.touched) {
        finish(id, failedOutcome('EngineError', 'ENGINE_UNAVAILABLE', `The pipeline engine stopped during the run: ${deadReason}`, run.started));
      } else {
        runs.delete(id);
        run.detach();
        run.resolve(runInline(run.options, run.started));
      }
    }
  });

  return {
    mode: 'worker',
    runPipeline(options) {
      const started = performance.now();
      if (options.signal?.aborted) return Promise.resolve(failedOutcome('AbortError', 'ABORTED', 'The run was cancelled before it started', started));
      if (fallback) return runInline(options, started);
      const { services, signal, ...rest } = options;
      let data: WorkerRunOptions;
      try {
        data = plain(rest) as WorkerRunOptions;
      } catch (error) {
        return Promise.resolve(
          failedOutcome(
            'ValidationError',
            'INVALID_PAYLOAD',
            `The run cannot be passed to the engine as JSON: ${(error as Error)?.message ?? String(error)}`,
            started,
          ),
        );
      }
      const id = ++seq;
      return new Promise<RunOutcome>((resolve) => {
        const onAbort = () => post({ type: 'abort', id });
        signal?.addEventListener('abort', onAbort, { once: true });
        runs.set(id, { resolve, options, started, touched: false, detach: () => signal?.removeEventListener('abort', onAbort) });
        void wasm.then(() => {
          if (!runs.has(id) || fallback) return; // moved to the inline engine meanwhile
          if (signal?.aborted) finish(id, failedOutcome('AbortError', 'ABORTED', 'The run was cancelled before it started', started));
          else post({ type: 'run', id, options: data, hasHttp: typeof services.http === 'function' });
        });
      });
    },
  };
}
