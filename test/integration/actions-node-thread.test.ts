import { describe, expect, it } from 'vitest';
import { createClient } from '../../src/index.js';

/**
 * Issue 15, item 4: the npm client in Node runs device pipelines in a worker thread (src/pipeline/node-worker.ts),
 * as the browser does in a Web Worker: a spinning run leaves the host's event loop free, and is stopped at its
 * time limit. No backend: `Pipeline.run` with `log: false` runs on the device only.
 */
describe('device pipelines in Node', () => {
  it('run in a worker thread: a spinning run does not block the event loop', async () => {
    const client = createClient({ baseUrl: 'http://127.0.0.1:9', appId: 1, limits: { runTimeoutMs: 2000 } });
    // Warm the engine thread up first (its start is not what is measured).
    expect(
      await client.App.Actions.Pipeline.run({ pipeline: [{ functionPackage: 'com.client.function.return', settings: { value: '{{ 6 * 7 }}' } }], log: false }),
    ).toBe(42);
    let ticks = 0;
    const timer = setInterval(() => ticks++, 20);
    const started = performance.now();
    const outcome = await client.App.Actions.Pipeline.runWithTrace({
      pipeline: [{ functionPackage: 'com.client.function.script', settings: { code: 'while (true) {}' } }],
      log: false,
    });
    clearInterval(timer);
    expect(outcome.ok).toBe(false);
    expect(!outcome.ok && outcome.error.code).toBe('TIMEOUT');
    // Inline, the interval would not fire once during the run; on a thread it fires all along (generous bound).
    expect(performance.now() - started).toBeGreaterThan(1500);
    expect(ticks).toBeGreaterThan(20);
    // The same client keeps running pipelines afterwards.
    expect(
      await client.App.Actions.Pipeline.run({
        pipeline: [{ functionPackage: 'com.client.function.script', settings: { code: 'return context.x + 1' } }],
        payload: { x: 1 },
        log: false,
      }),
    ).toBe(2);
  }, 30_000);
});
