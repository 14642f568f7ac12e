/**
 * Entry of the lazily loaded engine chunk (`dist/engine-<hash>.mjs`): imported by the page when no
 * Worker is available, or started as a module Worker, where it serves runs posted by the page.
 */
import { serveWorker } from './worker-host.js';

export { runPipeline, configureWasm, DEFAULT_PIPELINE_LIMITS, BUILTIN_FUNCTIONS } from './index.js';

declare const WorkerGlobalScope: { new (): unknown } | undefined;
const inWorker = typeof WorkerGlobalScope !== 'undefined' && typeof self !== 'undefined' && self instanceof (WorkerGlobalScope as never);
if (inWorker) serveWorker(self as never);
