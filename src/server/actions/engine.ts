/** The pipeline engine (issue 5), loaded on first use. */
import type { RunOutcome, RunPipelineOptions } from '../../contract/pipeline.js';
import { runPipeline } from '../../pipeline/index.js';

export interface Engine {
  runPipeline(options: RunPipelineOptions): Promise<RunOutcome>;
}

// A static import until rollup.config emits the engine as a separate chunk (output.dir); then
// `import('../../pipeline/index.js')` here makes it lazy again without touching the callers.
let engine: Promise<Engine> | undefined;

export function loadEngine(): Promise<Engine> {
  engine ??= Promise.resolve({ runPipeline });
  return engine;
}
