/** The pipeline engine (issue 5), loaded on first use. */
import type { RunOutcome, RunPipelineOptions } from '../../pipeline/types.js';

export interface Engine {
  runPipeline(options: RunPipelineOptions): Promise<RunOutcome>;
}

// Until src/pipeline/index.ts lands the path is kept out of the type checker's sight.
const ENGINE = '../../pipeline/index.js';
let engine: Promise<Engine> | undefined;

export function loadEngine(): Promise<Engine> {
  engine ??= (import(/* @vite-ignore */ ENGINE) as Promise<Engine>).catch((error) => {
    engine = undefined;
    throw error;
  });
  return engine;
}
