/** Browser build (client.js) of lazy-import.ts: each lazy chunk is a separate file, imported from a runtime-computed URL. */
import type { Chunks } from './lazy-import.js';

export type { Chunks, EngineModule } from './lazy-import.js';

export const CHUNKS_BUNDLED = false;

export function bundledChunk<K extends keyof Chunks>(_key: K): Chunks[K] | undefined {
  return undefined;
}

export function importChunk<K extends keyof Chunks>(key: K, url: string | undefined): Promise<Chunks[K]> {
  if (!url) return Promise.reject(new Error(`The location of the runtime's ${key} chunk is unknown: set config.assetsUrl (the folder of client.js)`));
  return import(/* @vite-ignore */ /* webpackIgnore: true */ url) as Promise<Chunks[K]>;
}
