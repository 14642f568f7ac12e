/**
 * The pipeline engine in a Node worker thread, for the npm client in Node (node-worker.ts): serves the runs the
 * client posts, as the engine Web Worker does in a browser (worker-host.ts, worker-protocol.ts). Built as
 * dist/engine-thread.mjs; from src/ it starts through engine-thread.mjs.
 */
import { parentPort } from 'node:worker_threads';
import { serveWorker } from './worker-host.js';

if (!parentPort) throw new Error('engine-thread: not started as a worker thread');
serveWorker(parentPort as never);
