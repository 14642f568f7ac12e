import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../../src/index.js';

/**
 * Issue 15: the npm client's engine thread in Node (src/pipeline/node-worker.ts) that dies after it started fails
 * only the run it had, and a new thread serves the next runs (the client never falls back to running pipelines on
 * its host's event loop). A file of its own: the engine is cached per process, and this one must start patched.
 */
// Node's own Worker, recorded as node-worker.ts creates it, so a test can kill a thread as a crash would. The
// engine (with its current thread) is shared by the clients of this file.
const threads = process.getBuiltinModule('node:worker_threads') as typeof import('node:worker_threads');
const NodeWorker = threads.Worker;
const started: InstanceType<typeof NodeWorker>[] = [];
beforeAll(() => {
  (threads as { Worker: unknown }).Worker = class extends NodeWorker {
    constructor(...args: ConstructorParameters<typeof NodeWorker>) {
      super(...args);
      started.push(this);
    }
  };
});
afterAll(() => {
  (threads as { Worker: unknown }).Worker = NodeWorker;
});

describe('a Node engine thread that dies', () => {
  it('fails the run it had with WORKER_CRASHED and is replaced by a new thread for the next runs', async () => {
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
  }, 30_000);

  it("does not hand a dead thread's late host answer to the new thread's run", async () => {
    // The first query is answered after 1 s, the second after 2.5 s: the first run's answer arrives while the
    // second run, on the new thread, waits for its own (both are the first call of their thread).
    let queries = 0;
    const server = createServer((req, res) => {
      req.resume();
      const n = ++queries;
      setTimeout(
        () => {
          res.writeHead(200, { 'Content-Type': 'application/json' });
          res.end(JSON.stringify({ entries: [{ id: n, data: { from: n === 1 ? 'first run' : 'second run' } }] }));
        },
        n === 1 ? 1000 : 2500,
      );
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const { port } = server.address() as AddressInfo;
      const client = createClient({ baseUrl: `http://127.0.0.1:${port}`, appId: 1, authToken: 'k', limits: { runTimeoutMs: 10_000 } });
      const read = {
        pipeline: [
          { functionPackage: 'com.client.function.script', settings: { code: 'const [e] = await Client.DataSources.connect(1).find(); return e.data.from;' } },
        ],
        log: false,
      };
      const first = client.App.Actions.Pipeline.runWithTrace(read);
      while (queries < 1) await new Promise((r) => setTimeout(r, 20));
      await started.at(-1)!.terminate();
      expect((await first).ok).toBe(false);
      expect(await client.App.Actions.Pipeline.run(read)).toBe('second run');
    } finally {
      server.close();
    }
  }, 30_000);
});
