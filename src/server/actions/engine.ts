/** The pipeline engine (issue 5), loaded on first use. */
import type { RunOutcome, RunPipelineOptions } from '../../pipeline/types.js';

export interface Engine {
  runPipeline(options: RunPipelineOptions): Promise<RunOutcome>;
}

let engine: Promise<Engine> | undefined;

export function loadEngine(): Promise<Engine> {
  engine ??= (import('../../pipeline/index.js') as Promise<Engine>).catch((error) => {
    engine = undefined;
    throw error;
  });
  return engine;
}
