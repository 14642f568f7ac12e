/**
 * The pipeline engine (design §6): runs a pipeline of function, loop and if
 * nodes inside a fresh QuickJS sandbox. The same code runs on the server, in
 * Node and in the browser (inside a Web Worker, see worker.ts).
 */
import { acquireModule, releaseModule } from '../sandbox/pool.js';
import { runWith } from './runner.js';
import type { RunOutcome, RunPipelineOptions } from '../contract/pipeline.js';

export type * from '../contract/pipeline.js';
export { DEFAULT_PIPELINE_LIMITS } from './limits.js';
export { configureWasm, type WasmSource } from '../sandbox/wasm.js';
export { BUILTIN_FUNCTIONS, type FunctionDescriptor } from '../functions/catalog.js';

/** Runs a pipeline. Never throws for a failing run: resolves `{ ok: false, error }` (payload over the limit: `PAYLOAD_TOO_LARGE` before anything runs). */
export function runPipeline(options: RunPipelineOptions): Promise<RunOutcome> {
  return runWith(options, { acquire: acquireModule, release: releaseModule });
}
