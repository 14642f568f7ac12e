/**
 * Loads the pipeline engine on the device (design §1): in a browser, a module Web Worker
 * started from `engine.mjs` next to client.js (or `config.assetsUrl`), so a long run never
 * blocks the page; the QuickJS `.wasm` next to it is fetched when the first pipeline runs.
 * Where Workers are unavailable (Node, happy-dom, some webviews) the same engine runs inline.
 */
import { ENGINE_IS_BUNDLED, importEngine } from './engine-import.js';
import type { RunOutcome, RunPipelineOptions } from './types.js';
import { answerCall, plain, serializeError, type PageToWorker, type WorkerToPage } from './worker-protocol.js';

export interface Engine {
  runPipeline(options: RunPipelineOptions): Promise<RunOutcome>;
  /** `worker` or `inline`. */
  readonly mode: 'worker' | 'inline';
}

export interface DeviceEngineOptions {
  /** Folder URL of engine.mjs and quickjs.wasm (default: the folder of the client.js script). */
  assetsUrl?: string;
  logger?: { once(key: string, message: string): void };
  /** Run inline even where Workers exist. */
  inline?: boolean;
}

export const ENGINE_FILE = 'engine.mjs';
export const WASM_FILE = 'quickjs.wasm';

/** The folder of the client.js script, captured while it is evaluated (document.currentScript is only set then). */
const scriptFolder: string | undefined = (() => {
  try {
    const src = (globalThis as { document?: { currentScript?: { src?: string } | null } }).document?.currentScript?.src;
    return src ? new URL('.', src).href : undefined;
  } catch {
    return undefined;
  }
})();

const engines = new Map<string, Promise<Engine>>();

export function loadDeviceEngine(options: DeviceEngineOptions = {}): Promise<Engine> {
  const folder = folderOf(options.assetsUrl ?? scriptFolder);
  const key = `${folder ?? ''}|${options.inline ? 'inline' : ''}`;
  let engine = engines.get(key);
  if (!engine) {
    engine = createEngine(folder, options).catch((error: unknown) => {
      engines.delete(key);
      throw error;
    });
    engines.set(key, engine);
  }
  return engine;
}

function folderOf(url: string | undefined): string | undefined {
  if (!url) return undefined;
  const base = (globalThis as { location?: { href?: string } }).location?.href;
  const absolute = new URL(url, base).href;
  return absolute.endsWith('/') ? absolute : `${absolute}/`;
}

async function createEngine(folder: string | undefined, options: DeviceEngineOptions): Promise<Engine> {
  const engineUrl = folder ? new URL(ENGINE_FILE, folder).href : undefined;
  const wasmUrl = folder ? new URL(WASM_FILE, folder).href : undefined;
  const isBrowser = typeof (globalThis as { document?: unknown }).document !== 'undefined' && !(globalThis as { happyDOM?: unknown }).happyDOM;
  if (!options.inline && !ENGINE_IS_BUNDLED && isBrowser && typeof Worker === 'function' && engineUrl) {
    try {
      return workerEngine(engineUrl, wasmUrl);
    } catch {
      options.logger?.once('engine.worker', 'Web Workers are unavailable here: pipelines run on the page');
    }
  } else if (!ENGINE_IS_BUNDLED || isBrowser) {
    options.logger?.once('engine.inline', 'No Web Worker here: pipelines run inline');
  }
  const module = await importEngine(engineUrl);
  if (wasmUrl && (isBrowser || !ENGINE_IS_BUNDLED)) module.configureWasm(wasmUrl);
  return { mode: 'inline', runPipeline: (o) => module.runPipeline(o) };
}

function workerEngine(engineUrl: string, wasmUrl: string | undefined): Engine {
  const origin = (globalThis as { location?: { origin?: string } }).location?.origin;
  const sameOrigin = origin !== undefined && new URL(engineUrl).origin === origin;
  // A cross-origin script (client.js on a CDN) cannot be a Worker directly: a same-origin blob imports it.
  const url = sameOrigin ? engineUrl : URL.createObjectURL(new Blob([`import ${JSON.stringify(engineUrl)};`], { type: 'text/javascript' }));
  const worker = new Worker(url, { type: 'module', name: 'in-app-runtime pipeline engine' });
  const runs = new Map<number, { resolve: (o: RunOutcome) => void; options: RunPipelineOptions; started: number }>();
  let seq = 0;
  const post = (message: PageToWorker) => worker.postMessage(message);

  worker.addEventListener('message', (event: MessageEvent<WorkerToPage>) => {
    const message = event.data;
    const run = runs.get(message.id);
    if (!run) return;
    if (message.type === 'done') {
      runs.delete(message.id);
      run.resolve(message.outcome);
      return;
    }
    answerCall(run.options.services, message).then(
      (value) => post({ type: 'reply', id: message.id, callId: message.callId, ok: true, value: plain(value) }),
      (error: unknown) => post({ type: 'reply', id: message.id, callId: message.callId, ok: false, error: serializeError(error) }),
    );
  });
  worker.addEventListener('error', (event) => {
    for (const [id, run] of runs) {
      runs.delete(id);
      const message = `The pipeline engine could not start: ${(event as ErrorEvent).message || engineUrl}`;
      run.resolve({ ok: false, error: { errorType: 'EngineError', errorMessage: message, code: 'ENGINE_UNAVAILABLE', trace: [] }, trace: [], durationMs: performance.now() - run.started });
    }
  });

  return {
    mode: 'worker',
    runPipeline(options) {
      const { services, signal, ...rest } = options;
      const id = ++seq;
      return new Promise<RunOutcome>((resolve) => {
        runs.set(id, { resolve, options, started: performance.now() });
        post({ type: 'run', id, options: plain(rest) as never, hasHttp: typeof services.http === 'function', wasmUrl });
        signal?.addEventListener('abort', () => post({ type: 'abort', id }), { once: true });
      });
    },
  };
}
