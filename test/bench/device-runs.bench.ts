/**
 * Small device runs through the public API (issue 17): `Client.App.Actions.runWithResult` of a published client
 * action (set, if, return) in Node, against the reference backend on this process, IndexedDB by fake-indexeddb, each
 * run's log recorded; with `actionMaxAgeMs` 0 (every run asks the backend for the action: a 304), the default
 * (1,000 ms) and 60 s (docs/actions.md "Action copies on the device"). Baselines in the same run: the bare engine (`runPipeline`, no client, no log) and bare QuickJS
 * (newRuntime + newContext + evalCode + dispose).
 */
import 'fake-indexeddb/auto';
import { loadavg } from 'node:os';
import { afterAll, beforeAll, test } from 'vitest';
import { createClient, type Client } from '../../src/index.js';
import { runPipeline } from '../../src/pipeline/index.js';
import type { HostServices, PipelineNode } from '../../src/contract/pipeline.js';
import { acquireModule, releaseModule } from '../../src/sandbox/pool.js';
import { startTestBackend, type TestBackend } from '../helpers/server.js';

const F = (name: string) => `com.client.function.${name}`;
const small: PipelineNode[] = [
  { functionPackage: F('set'), settings: { total: '{{ a + b }}' } },
  { type: 'if', conditions: [{ condition: 'total > 3', functions: [{ functionPackage: F('set'), settings: { big: true } }] }] },
  { functionPackage: F('return'), settings: { value: '{{ { total, big } }}' } },
];
const services: HostServices = { dataSources: { connect: () => ({}) as never }, notifications: { create: async () => ({}) } };

/** CPU time of this process per run (every thread: the engine's, the backend's), ms, by measurement. */
const cpuPerRun = new Map<unknown, number[]>();

/**
 * Runs per second: median of 5 batches, each at least `ms` / 5 and `minRuns` calls, after `warm` calls. Also notes
 * the process's CPU time per run of the median batch (`cpuPerRun`), which the machine's load weighs on less.
 */
async function perSecond(fn: () => Promise<unknown>, ms = 2000, minRuns = 50, warm = 20): Promise<number> {
  for (let i = 0; i < warm; i++) await fn();
  const batches: { rate: number; cpu: number }[] = [];
  for (let b = 0; b < 5; b++) {
    const start = performance.now();
    const cpu = process.cpuUsage();
    let runs = 0;
    while (runs < minRuns || performance.now() - start < ms / 5) {
      await fn();
      runs++;
    }
    const used = process.cpuUsage(cpu);
    batches.push({ rate: (runs * 1000) / (performance.now() - start), cpu: (used.user + used.system) / 1000 / runs });
  }
  const median = batches.sort((x, y) => x.rate - y.rate)[2]!;
  cpuPerRun.set(fn, [...(cpuPerRun.get(fn) ?? []), median.cpu]);
  return median.rate;
}

let b: TestBackend;
/** Node clients (API token, live app) with the run rate limit out of the way, by `actionMaxAgeMs`. */
const pages = new Map<string, Client>();
beforeAll(async () => {
  b = await startTestBackend();
  const action = await b.client.App.Actions.create({ name: 'small', environment: 'client', functions: small });
  await b.client.App.Actions.publish(action.id, true);
  const client = (actionMaxAgeMs?: number) =>
    createClient({
      baseUrl: b.url,
      appId: b.server.bootstrap.appId,
      authToken: b.server.bootstrap.apiToken,
      limits: { runsPerMinute: 10_000_000 },
      actionMaxAgeMs,
    });
  // 0: every run asks the backend (a 304 after the first); default: a copy is used for 1,000 ms; tuned: 60 s.
  pages.set('0', client(0));
  pages.set('default', client());
  pages.set('60000', client(60_000));
});
afterAll(() => b?.close());

test('device runs through the public API', async () => {
  const expected = JSON.stringify({ total: 5, big: true });
  const viaClient = (page: Client) => async () => {
    const result = await page.App.Actions.runWithResult('small', { a: 2, b: 3 });
    if (JSON.stringify(result) !== expected) throw new Error(`unexpected result ${JSON.stringify(result)}`);
  };
  const bareEngine = async () => {
    const outcome = await runPipeline({ environment: 'client', services, functions: small, payload: { a: 2, b: 3 } });
    if (!outcome.ok) throw new Error(outcome.error.errorMessage);
  };
  const module = await acquireModule(128 * 1024 * 1024);
  const bareQuickJs = async () => {
    const rt = module.quickjs.newRuntime();
    const ctx = rt.newContext();
    ctx.unwrapResult(ctx.evalCode('1 + 2')).dispose();
    ctx.dispose();
    rt.dispose();
  };

  // Runs a page starts without waiting for the last one (analytics events, a list of items): IN_FLIGHT at a time.
  const IN_FLIGHT = 8;
  const overlapped = (page: Client) => {
    const one = viaClient(page);
    return () => Promise.all(Array.from({ length: IN_FLIGHT }, one));
  };

  // Interleaved rounds, so that the machine's load weighs on each figure alike.
  const clients = {
    maxAge0: viaClient(pages.get('0')!),
    maxAgeDefault: viaClient(pages.get('default')!),
    maxAge60s: viaClient(pages.get('60000')!),
    inFlight: overlapped(pages.get('default')!),
  };
  const figures = {
    maxAge0: [] as number[],
    maxAgeDefault: [] as number[],
    maxAge60s: [] as number[],
    inFlight: [] as number[],
    engine: [] as number[],
    quickjs: [] as number[],
  };
  for (let round = 0; round < 3; round++) {
    figures.maxAge0.push(await perSecond(clients.maxAge0));
    figures.maxAgeDefault.push(await perSecond(clients.maxAgeDefault));
    figures.maxAge60s.push(await perSecond(clients.maxAge60s));
    figures.inFlight.push(IN_FLIGHT * (await perSecond(clients.inFlight, 2000, 10, 3)));
    figures.engine.push(await perSecond(bareEngine));
    figures.quickjs.push(await perSecond(bareQuickJs));
  }
  releaseModule(module);
  const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[1]!;
  const engine = median(figures.engine);
  const quickjs = median(figures.quickjs);
  const logs = await b.client.App.Actions.getLogs({ limit: 1 });
  console.log(
    `\nDevice runs (load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')} at the end; ${logs.count} logs recorded)\n`,
  );
  const cpu = (fn: unknown, runs = 1) => +(median(cpuPerRun.get(fn)!) / runs).toFixed(3);
  const viaApi = (label: string, xs: number[], fn: unknown, runs = 1) => ({
    measurement: `runWithResult of a device action (set, if, return), log recorded, ${label}`,
    'runs/s': Math.round(median(xs)),
    'x bare engine': +(median(xs) / engine).toFixed(2),
    'CPU ms/run': cpu(fn, runs),
    target: '≥ 1,000',
  });
  console.table([
    viaApi('actionMaxAgeMs 0 (every run asks: 304)', figures.maxAge0, clients.maxAge0),
    viaApi('actionMaxAgeMs default (1,000 ms)', figures.maxAgeDefault, clients.maxAgeDefault),
    viaApi('actionMaxAgeMs 60,000', figures.maxAge60s, clients.maxAge60s),
    viaApi(`actionMaxAgeMs default, ${IN_FLIGHT} runs in flight`, figures.inFlight, clients.inFlight, IN_FLIGHT),
    {
      measurement: 'bare engine: runPipeline of the same pipeline (no client, no log)',
      'runs/s': Math.round(engine),
      'x bare engine': 1,
      'CPU ms/run': cpu(bareEngine),
      target: '',
    },
    {
      measurement: 'bare QuickJS: newRuntime + newContext + evalCode + dispose',
      'runs/s': Math.round(quickjs),
      'x bare engine': +(quickjs / engine).toFixed(2),
      'CPU ms/run': cpu(bareQuickJs),
      target: '',
    },
  ]);
  console.log(
    'rounds',
    JSON.stringify(figures, (_k, v) => (typeof v === 'number' ? Math.round(v) : v)),
  );
}, 300_000);
