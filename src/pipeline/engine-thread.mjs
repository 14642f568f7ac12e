/**
 * From the TypeScript sources (tests under vitest): starts the Node engine thread by registering
 * scripts/ts-thread-loader.mjs, then importing node-thread.ts. The built package has its own
 * dist/engine-thread.mjs (built from node-thread.ts) at the same place relative to the client code, so
 * node-worker.ts names `./engine-thread.mjs` in both.
 */
import { register } from 'node:module';

register('../../scripts/ts-thread-loader.mjs', import.meta.url);
await import('./node-thread.ts');
