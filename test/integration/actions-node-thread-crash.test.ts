import { describe, expect, it } from 'vitest';
import { createClient } from '../../src/index.js';

/**
 * Issue 15: the npm client's engine thread in Node (src/pipeline/node-worker.ts) that dies after it started fails
 * only the run it had, and a new thread serves the next runs (the client never falls back to running pipelines on
 * its host's event loop). A file of its own: the engine is cached per process, and this one must start patched.
 */
describe('a Node engine thread that dies', () => {
  it('fails the run it had with WORKER_CRASHED and is replaced by a new thread for the next runs', async () => {
    // Node's own Worker, recorded as node-worker.ts creates it, so the test can kill a thread as a crash would.
    const threads = process.getBuiltinModule('node:worker_threads') as typeof import('node:worker_threads');
    const NodeWorker = threads.Worker;
    const started: InstanceType<typeof NodeWorker>[] = [];
    (threads as { Worker: unknown }).Worker = class extends NodeWorker {
      constructor(...args: ConstructorParameters<typeof NodeWorker>) {
        super(...args);
        started.push(this);
      }
    };
    try {
      const client = createClient({ baseUrl: 'http://127.0.0.1:9', appId: 1, limits: { runTimeoutMs: 2000 } });
      const spin = { pipeline: [{ functionPackage: 'com.client.function.script', settings: { code: 'while (true) {}' } }], log: false };
      const answer = { pipeline: [{ functionPackage: 'com.client.function.return', settings: { value: '{{ 6 * 7 }}' } }], log: false };
      expect(await client.App.Actions.Pipeline.run(answer)).toBe(42);
      expect(started).toHaveLength(1);

      const running = client.App.Actions.Pipeline.runWithTrace(spin);
      await new Promise((r) => setTimeout(r, 300));
      await started[0]!.terminate();
      const outcome = await running;
      expect(!outcome.ok && outcome.error.code).toBe('WORKER_CRASHED');

      // A new thread, not the page's event loop: the next runs work, and a spinning one still leaves the loop free.
      expect(await client.App.Actions.Pipeline.run(answer)).toBe(42);
      expect(started).toHaveLength(2);
      let ticks = 0;
      const timer = setInterval(() => ticks++, 20);
      const timedOut = await client.App.Actions.Pipeline.runWithTrace(spin);
      clearInterval(timer);
      expect(!timedOut.ok && timedOut.error.code).toBe('TIMEOUT');
      expect(ticks).toBeGreaterThan(20);
      expect(started).toHaveLength(2);
    } finally {
      (threads as { Worker: unknown }).Worker = NodeWorker;
    }
  }, 30_000);
});
