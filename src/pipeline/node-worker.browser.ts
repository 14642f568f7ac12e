/** client.js's twin of node-worker.ts (rollup.config.mjs, `browserLazyImport`): a browser has no worker_threads. */
import type { WorkerLike } from './node-worker.js';

export type { WorkerLike };

export function startNodeWorker(): WorkerLike | undefined {
  return undefined;
}
