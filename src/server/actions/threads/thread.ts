/**
 * Entry of a run thread (`worker_threads`): the pipeline engine with its own QuickJS module, serving the runs
 * the pool posts (src/pipeline/worker-protocol.ts). Host services stay on the main thread: each call is a
 * message answered there. Built as dist/server/run-thread.mjs; from src/ it starts through dev-thread.mjs.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { serveWorker } from '../../../pipeline/worker-host.js';
import { lowerThreadPriority } from './priority.js';

if (!parentPort) throw new Error('run-thread: not started as a worker thread');
lowerThreadPriority((workerData as { niceness?: number } | undefined)?.niceness);
serveWorker(parentPort as never);
