/**
 * Where a run thread starts. From src/ (tests under vitest): dev-thread.mjs, which registers a TypeScript
 * loader and imports thread.ts. The build replaces this module (rollup.config.mjs, `runThreadEntry`) with the
 * URL of dist/server/run-thread.mjs, emitted from thread.ts as an entry of its own.
 */
export const THREAD_ENTRY: URL = new URL('./dev-thread.mjs', import.meta.url);
