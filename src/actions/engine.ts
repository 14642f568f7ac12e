/** The pipeline engine on the device: a lazily loaded chunk run in a Web Worker where possible (src/pipeline/device.ts). */
import type { RunOutcome, RunPipelineOptions } from '../pipeline/types.js';
import { loadDeviceEngine } from '../pipeline/device.js';

export interface Engine {
  runPipeline(options: RunPipelineOptions): Promise<RunOutcome>;
}

/** `assetsUrl` (config) locates the engine chunk and the QuickJS wasm; default: next to client.js. */
export function loadEngine(options: { assetsUrl?: string; logger?: { once(key: string, message: string): void } } = {}): Promise<Engine> {
  return loadDeviceEngine(options);
}
