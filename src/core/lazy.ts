/**
 * Lazy chunks of client.js (docs/pipeline.md "Lazy chunks"): code few screens need sits in content-hashed files
 * next to client.js (`engine`, `query`, `validate`, `pipeline`, `push`, `catalog`, `runs`, `notify`: the names come from dist/runtime.json as the constants of
 * src/pipeline/asset-names.ts) and is imported on first use from `config.assetsUrl`, else the folder client.js
 * was loaded from (a CDN copy too). The npm build bundles them (src/core/lazy-import.ts).
 */
import { CATALOG_FILE, ENGINE_FILE, NOTIFY_FILE, PIPELINE_FILE, PUSH_FILE, QUERY_FILE, RUNS_FILE, VALIDATE_FILE } from '../pipeline/asset-names.js';
import { ClientError } from '../http/errors.js';
import { bundledChunk, importChunk, type Chunks } from './lazy-import.js';

export type { Chunks };

const FILES: Record<keyof Chunks, string> = {
  engine: ENGINE_FILE,
  query: QUERY_FILE,
  validate: VALIDATE_FILE,
  pipeline: PIPELINE_FILE,
  push: PUSH_FILE,
  catalog: CATALOG_FILE,
  runs: RUNS_FILE,
  notify: NOTIFY_FILE,
};

/** The folder of the client.js script, captured while it is evaluated (document.currentScript is only set then). */
const scriptFolder: string | undefined = (() => {
  try {
    const src = (globalThis as { document?: { currentScript?: { src?: string } | null } }).document?.currentScript?.src;
    return src ? new URL('.', src).href : undefined;
  } catch {
    return undefined;
  }
})();

/** The absolute folder URL (with a trailing slash) of the lazy files: `assetsUrl`, else the folder of client.js. */
export function assetsFolder(assetsUrl: string | undefined): string | undefined {
  const url = assetsUrl ?? scriptFolder;
  if (!url) return undefined;
  const base = (globalThis as { location?: { href?: string } }).location?.href;
  const absolute = new URL(url, base).href;
  return absolute.endsWith('/') ? absolute : `${absolute}/`;
}

/** The URL of a lazy chunk in `folder` (undefined when the folder is unknown). */
export const chunkUrl = (key: keyof Chunks, folder: string | undefined): string | undefined => (folder ? new URL(FILES[key], folder).href : undefined);

const loaded: Partial<Chunks> = {};
const loading = new Map<string, Promise<unknown>>();

/** A chunk already loaded (or bundled: npm build), for synchronous callers; undefined before `loadChunk` resolves. */
export function loadedChunk<K extends keyof Chunks>(key: K): Chunks[K] | undefined {
  return bundledChunk(key) ?? loaded[key];
}

/**
 * Loads a lazy chunk once (the engine has its own loader, src/pipeline/device.ts). A failed load rejects with
 * ClientError CHUNK_UNAVAILABLE and is tried again by the next call.
 */
export function loadChunk<K extends Exclude<keyof Chunks, 'engine'>>(key: K, assetsUrl: string | undefined): Promise<Chunks[K]> {
  const ready = loadedChunk(key);
  if (ready) return Promise.resolve(ready);
  const url = chunkUrl(key, assetsFolder(assetsUrl));
  const cacheKey = `${key}|${url ?? ''}`;
  let promise = loading.get(cacheKey) as Promise<Chunks[K]> | undefined;
  if (!promise) {
    promise = importChunk(key, url).then(
      (module) => (loaded[key] = module),
      (error: unknown) => {
        loading.delete(cacheKey);
        throw new ClientError(
          'CHUNK_UNAVAILABLE',
          `The runtime's ${key} chunk could not load from ${url ?? '(unknown)'}: ${(error as Error)?.message ?? String(error)}`,
        );
      },
    );
    loading.set(cacheKey, promise);
  }
  return promise;
}
