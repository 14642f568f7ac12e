import { describe, expect, it } from 'vitest';
import { runPipeline } from '../../src/pipeline/index.js';
import type { HostServices } from '../../src/contract/pipeline.js';

/** A node that timed out is over: its code never resumes later (after continueOnError, or beside a retry). */
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const slowService = (): HostServices & { calls: number } => {
  const s = {
    calls: 0,
    dataSources: {
      connect: () =>
        ({
          find: async (q: { delay?: number } = {}) => {
            s.calls++;
            await sleep(q?.delay ?? 0);
            return [{ id: 1 }];
          },
        }) as never,
    },
    notifications: { create: async () => ({}) },
  };
  return s;
};

describe('per-node timeout of user code awaiting a host call', () => {
  it('with continueOnError: the timed-out function does not finish inside a later node', async () => {
    const services = slowService();
    const outcome = await runPipeline({
      environment: 'server',
      services,
      customFunctions: [
        {
          package: 'slow',
          code: `async (s, context) => { await Client.DataSources.connect('x').find({ delay: 150 }); context.leaked = 'late'; return { late: true } }`,
        },
      ],
      functions: [
        { functionPackage: 'slow', timeout: 30, continueOnError: true },
        {
          functionPackage: 'com.client.function.script',
          settings: { code: `await Client.DataSources.connect('x').find({ delay: 300 }); return { second: true }` },
        },
        {
          functionPackage: 'com.client.function.return',
          settings: { value: '{{ { late: context.late, leaked: context.leaked, code: lastError.code, second } }}' },
        },
      ],
    });
    expect(outcome.ok && outcome.result).toEqual({ code: 'TIMEOUT', second: true });
  });

  it('with retry: the timed-out first try does not finish in the background during the second', async () => {
    const services = slowService();
    const outcome = await runPipeline({
      environment: 'server',
      services,
      customFunctions: [
        {
          package: 'slow',
          // The first try's answer (at 1,300 ms) comes during the second try (1,000 to 1,600 ms, deadline 2,000):
          // margins of 300 ms or more, which hold on a loaded machine (80/100/150 ms did not, at load 9).
          code: `async (s, context) => { const n = (context.tries || 0) + 1; context.tries = n; await Client.DataSources.connect('x').find({ delay: n === 1 ? 1300 : 600 }); context.finished = (context.finished || []).concat([n]); return {} }`,
        },
      ],
      functions: [
        { functionPackage: 'slow', timeout: 1000, retry: { attempts: 2 }, continueOnError: true },
        { functionPackage: 'com.client.function.return', settings: { value: '{{ { tries, finished: context.finished } }}' } },
      ],
    });
    expect(outcome.ok && outcome.result).toEqual({ tries: 2, finished: [2] });
    expect(services.calls).toBe(2);
  });
});
