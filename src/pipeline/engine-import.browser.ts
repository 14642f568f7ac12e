/** Browser build (client.js) of engine-import.ts: the engine is a separate file, imported from a runtime-computed URL. */
import type { EngineModule } from './engine-import.js';

export const ENGINE_IS_BUNDLED = false;

export function importEngine(url: string | undefined): Promise<EngineModule> {
  if (!url) return Promise.reject(new Error('The pipeline engine location is unknown: set config.assetsUrl (the folder of client.js)'));
  return import(/* @vite-ignore */ /* webpackIgnore: true */ url) as Promise<EngineModule>;
}
