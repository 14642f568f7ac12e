/** How the device loads the engine module. npm/Node build: a dynamic import of the engine (the browser build swaps this file, see rollup.config.mjs). */
export interface EngineModule {
  runPipeline: typeof import('./index.js').runPipeline;
  configureWasm: typeof import('./index.js').configureWasm;
}

export const ENGINE_IS_BUNDLED = true;

export function importEngine(_url: string | undefined): Promise<EngineModule> {
  return import('./index.js');
}
