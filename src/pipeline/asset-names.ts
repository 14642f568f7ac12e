/**
 * File names of the runtime assets that sit next to client.js. The script-tag build replaces this module
 * with the content-hashed names of its own build (`engine-<hash>.mjs`, `quickjs-<hash>.wasm`, read from
 * `dist/runtime.json`, see rollup.config.mjs), so they can be cached forever. These defaults are the
 * names tests and the npm build (which bundles the engine) never fetch.
 */
export const ENGINE_FILE = 'engine.mjs';
export const WASM_FILE = 'quickjs.wasm';
