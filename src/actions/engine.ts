/** The pipeline engine on the device: a lazily loaded chunk run in a Web Worker where possible (src/pipeline/device.ts). */
import type { RunOutcome, RunPipelineOptions } from '../contract/pipeline.js';
import { loadDeviceEngine } from '../pipeline/device.js';

export interface Engine {
  runPipeline(options: RunPipelineOptions): Promise<RunOutcome>;
}

/** `assetsUrl` (config) locates the engine chunk and the QuickJS wasm; default: next to client.js. */
/** `inline`: run on this thread, not in a Web Worker (debug in page, whose functions cannot cross to a Worker). */
export function loadEngine(options: { assetsUrl?: string; logger?: { once(key: string, message: string): void }; inline?: boolean } = {}): Promise<Engine> {
  return loadDeviceEngine(options);
}
