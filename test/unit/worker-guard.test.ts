import { describe, expect, it } from 'vitest';
import type { RunOutcome } from '../../src/contract/pipeline.js';
import { guardRun } from '../../src/server/actions/worker.js';

const never = new Promise<RunOutcome>(() => {});

describe('the worker guard of a server run', () => {
  it('records TIMEOUT (not ABORTED) when the engine does not return, then aborts the run', async () => {
    const controller = new AbortController();
    const outcome = await guardRun(never, 40, controller, 10);
    expect(outcome.ok).toBe(false);
    expect(!outcome.ok && [outcome.error.code, outcome.error.errorType]).toEqual(['TIMEOUT', 'TimeoutError']);
    expect(controller.signal.aborted).toBe(true);
  });

  it('records ABORTED when the run is stopped first (shutdown), and passes a finished outcome through', async () => {
    const stopped = new AbortController();
    const pending = guardRun(never, 10_000, stopped);
    stopped.abort(new Error('closing'));
    const outcome = await pending;
    expect(!outcome.ok && outcome.error.code).toBe('ABORTED');
    const done: RunOutcome = { ok: true, result: 42, trace: [], durationMs: 1 };
    expect(await guardRun(Promise.resolve(done), 10_000, new AbortController())).toBe(done);
  });
});
