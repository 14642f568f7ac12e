/**
 * How the lazy chunks of src/core/lazy.ts are imported. npm/Node build: they are bundled, the small ones
 * statically (so they are there synchronously), the engine by a dynamic import. The script-tag build swaps
 * this file for lazy-import.browser.ts (see rollup.config.mjs), which imports each from its URL.
 */
import * as pipeline from '../actions/pipeline-run.js';
import * as catalog from '../functions/catalog.js';
import * as push from '../notifications/push-subscribe.js';
import * as notify from '../notifications/writes.js';
import * as validate from '../contract/action-validate.js';
import * as query from './query-entry.js';
import * as runs from './runs-entry.js';

export interface EngineModule {
  runPipeline: typeof import('../pipeline/index.js').runPipeline;
  configureWasm: typeof import('../pipeline/index.js').configureWasm;
}

/** The lazy chunks by manifest key (dist/runtime.json), with their modules' shapes. */
export interface Chunks {
  engine: EngineModule;
  query: typeof query;
  validate: typeof validate;
  pipeline: typeof pipeline;
  push: typeof push;
  catalog: typeof catalog;
  runs: typeof runs;
  notify: typeof notify;
}

export const CHUNKS_BUNDLED = true;

const BUNDLED: Omit<Chunks, 'engine'> = { query, validate, pipeline, push, catalog, runs, notify };

/** A chunk that is already there without an import (npm build): all but the engine. */
export function bundledChunk<K extends keyof Chunks>(key: K): Chunks[K] | undefined {
  return key === 'engine' ? undefined : (BUNDLED as Partial<Chunks>)[key];
}

export function importChunk<K extends keyof Chunks>(key: K, _url: string | undefined): Promise<Chunks[K]> {
  return (key === 'engine' ? import('../pipeline/index.js') : Promise.resolve(bundledChunk(key))) as Promise<Chunks[K]>;
}
