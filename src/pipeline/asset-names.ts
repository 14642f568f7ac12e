/**
 * File names of the runtime assets that sit next to client.js (src/core/lazy.ts). The script-tag build replaces
 * this module with the content-hashed names of its own build (`engine-<hash>.mjs`, `quickjs-<hash>.wasm`,
 * `query-<hash>.mjs`, `validate-<hash>.mjs`, `pipeline-<hash>.mjs`, `push-<hash>.mjs`, `catalog-<hash>.mjs`, `runs-<hash>.mjs`, `notify-<hash>.mjs`: one `<KEY>_FILE` per key of `dist/runtime.json`, see
 * rollup.config.mjs), so they can be cached forever. These defaults are the names tests and the npm build
 * (which bundles the chunks) never fetch.
 */
export const ENGINE_FILE = 'engine.mjs';
export const WASM_FILE = 'quickjs.wasm';
export const QUERY_FILE = 'query.mjs';
export const VALIDATE_FILE = 'validate.mjs';
export const PIPELINE_FILE = 'pipeline.mjs';
export const PUSH_FILE = 'push.mjs';
export const CATALOG_FILE = 'catalog.mjs';
export const RUNS_FILE = 'runs.mjs';
export const NOTIFY_FILE = 'notify.mjs';
