import { expect, it } from 'vitest';
import { availableParallelism } from 'node:os';
import { createClient } from '../../src/index.js';
import { startServer, type RunningServer, type ServerOptions } from '../../src/server/index.js';

/**
 * Server runs on the run thread pool (issue 15) vs inline on the HTTP thread (`runThreads: 0`, how runs executed
 * before), measured in the same run: API latency and throughput while runs spin, small runs per second, and how
 * soon a second app's run starts behind a first app's long queue. The HTTP client runs in this process too.
 */
const fn = (name: string, settings: Record<string, unknown>) => ({ functionPackage: `com.client.function.${name}`, settings });
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))]!;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function backend(limits: ServerOptions['limits']) {
  const server = await startServer({ port: 0, memory: true, log: false, limits: { runsPerMinute: 1_000_000, ...limits } });
  const { appId, apiToken } = server.bootstrap;
  const call = async (method: string, path: string, json?: unknown, token = apiToken) => {
    const res = await fetch(server.url + path, {
      method,
      headers: { 'Auth-token': token, 'Content-Type': 'application/json' },
      body: json === undefined ? undefined : JSON.stringify(json),
    });
    return { status: res.status, body: (await res.json()) as any };
  };
  const action = async (name: string, functions: unknown[], app = appId, token = apiToken) => {
    const { body } = await call('POST', `/v1/apps/${app}/tasks`, { name, functions }, token);
    await call('POST', `/v1/apps/${app}/tasks/${body.action.id}/publish`, { publish: true }, token);
  };
  return { server, appId, apiToken, call, action };
}

/** Sequential GETs for `ms` (latencies), then `clients` concurrent loops for `ms` (requests per second). */
async function measureApi(server: RunningServer, get: () => Promise<unknown>, ms: number, clients = 8) {
  const latencies: number[] = [];
  const end = performance.now() + ms;
  while (performance.now() < end) {
    const t = performance.now();
    await get();
    latencies.push(performance.now() - t);
  }
  let done = 0;
  const stop = performance.now() + ms;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (performance.now() < stop) {
        await get();
        done++;
      }
    }),
  );
  void server;
  return { p50: pct(latencies, 50), p99: pct(latencies, 99), max: Math.max(...latencies), rps: done / (ms / 1000) };
}

it('server runs: API while runs spin, runs per second, a second app behind a long queue', async () => {
  const rows: Record<string, unknown>[] = [];
  const cores = availableParallelism();

  // 1. API latency and throughput, idle vs four busy-looping runs in flight (pool of 4 threads): three cycles of
  // an idle window then a busy one (the machine is shared: load from elsewhere hits both alike), medians.
  {
    const b = await backend({ runThreads: 4, appConcurrency: 4, runTimeoutMs: 4000 });
    await b.action('spin', [fn('script', { code: 'while (true) {}' })]);
    const get = () => b.call('GET', `/v1/apps/${b.appId}/tasks/spin`);
    for (let i = 0; i < 50; i++) await get();
    const idle: Awaited<ReturnType<typeof measureApi>>[] = [];
    const busy: typeof idle = [];
    for (let cycle = 0; cycle < 3; cycle++) {
      idle.push(await measureApi(b.server, get, 1000));
      const runs = Array.from({ length: 4 }, () => b.call('POST', `/v1/apps/${b.appId}/tasks/spin/run`, { wait: true }));
      await sleep(800);
      busy.push(await measureApi(b.server, get, 1000));
      expect((await Promise.all(runs)).map((r) => r.body.error?.code)).toEqual(['TIMEOUT', 'TIMEOUT', 'TIMEOUT', 'TIMEOUT']);
    }
    const med = (list: typeof idle, key: 'p50' | 'p99' | 'max' | 'rps') =>
      pct(
        list.map((m) => m[key]),
        50,
      );
    const ratio = pct(
      busy.map((m, i) => m.rps / idle[i]!.rps),
      50,
    );
    rows.push({
      case: 'API idle (pool)',
      'p50 ms': +med(idle, 'p50').toFixed(1),
      'p99 ms': +med(idle, 'p99').toFixed(1),
      'max ms': +med(idle, 'max').toFixed(1),
      'req/s': Math.round(med(idle, 'rps')),
    });
    rows.push({
      case: 'API, 4 runs spinning (pool of 4)',
      'p50 ms': +med(busy, 'p50').toFixed(1),
      'p99 ms': +med(busy, 'p99').toFixed(1),
      'max ms': +med(busy, 'max').toFixed(1),
      'req/s': Math.round(med(busy, 'rps')),
      'vs idle': +ratio.toFixed(2),
    });
    await b.server.close();
  }
  // Baseline: inline (how runs executed before), one spinning run (3 s limit) holds the event loop: the GETs
  // sent from the moment it is queued, for 4 s (the client shares the event loop, so a GET in flight when the run
  // starts spinning waits for it).
  {
    const b = await backend({ runThreads: 0, runTimeoutMs: 3000 });
    await b.action('spin', [fn('script', { code: 'while (true) {}' })]);
    const get = () => b.call('GET', `/v1/apps/${b.appId}/tasks/spin`);
    for (let i = 0; i < 20; i++) await get();
    await b.call('POST', `/v1/apps/${b.appId}/tasks/spin/run`, {});
    const latencies: number[] = [];
    const end = performance.now() + 4000;
    while (performance.now() < end) {
      const t = performance.now();
      await get();
      latencies.push(performance.now() - t);
    }
    rows.push({
      case: 'baseline: API, 1 run spinning inline (3 s limit)',
      'p50 ms': +pct(latencies, 50).toFixed(1),
      'p99 ms': Math.round(pct(latencies, 99)),
      'max ms': Math.round(Math.max(...latencies)),
    });
    await b.server.close();
  }

  // 2. Small runs per second: 300 runs of `return 1 + 1`, 8 clients waiting for each result; three rounds with the
  // configurations interleaved (the machine is shared), the median of each.
  const throughput = async (limits: ServerOptions['limits']) => {
    const b = await backend(limits);
    await b.action('small', [fn('script', { code: 'return 1 + 1;' })]);
    for (let i = 0; i < 10; i++) await b.call('POST', `/v1/apps/${b.appId}/tasks/small/run`, { wait: true });
    const N = 300;
    let next = 0;
    const t = performance.now();
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next++ < N) expect((await b.call('POST', `/v1/apps/${b.appId}/tasks/small/run`, { wait: true })).body.result).toBe(2);
      }),
    );
    const perSecond = N / ((performance.now() - t) / 1000);
    await b.server.close();
    return perSecond;
  };
  const configs: [string, ServerOptions['limits']][] = [
    ['baseline: small runs inline (4 at a time)', { runThreads: 0 }],
    [`small runs, pool of ${cores} (default: appConcurrency ${Math.max(1, cores - 1)})`, {}],
    [`small runs, pool of ${cores}, appConcurrency ${cores}`, { appConcurrency: cores }],
  ];
  const results = configs.map(() => [] as number[]);
  for (let round = 0; round < 3; round++) for (const [i, [, limits]] of configs.entries()) results[i]!.push(await throughput(limits));
  const inline = pct(results[0]!, 50);
  for (const [i, [label]] of configs.entries()) {
    const median = pct(results[i]!, 50);
    rows.push({ case: label, 'runs/s': Math.round(median), ...(i > 0 ? { 'vs inline': +(median / inline).toFixed(2) } : {}) });
  }

  // 3. A second app's run while the first app has 500 queued (each ~20 ms of CPU).
  {
    const b = await backend({});
    await b.action('work', [fn('script', { code: 'const t = Date.now(); while (Date.now() - t < 20) {} return 1;' })]);
    const other = await b.server.createOrganization('Other');
    await b.action('quick', [fn('return', { value: 1 })], other.appId, other.apiToken);
    const t0 = performance.now();
    for (let i = 0; i < 500; i += 25) await Promise.all(Array.from({ length: 25 }, () => b.call('POST', `/v1/apps/${b.appId}/tasks/work/run`, {})));
    const enqueueMs = performance.now() - t0;
    const client = createClient({ baseUrl: b.server.url, appId: b.appId, authToken: b.apiToken });
    const before = (await client.App.Actions.getLogs({ limit: 1 })).count;
    const t = performance.now();
    const answer = await b.call('POST', `/v1/apps/${other.appId}/tasks/quick/run`, { wait: true }, other.apiToken);
    const waitMs = performance.now() - t;
    const after = (await client.App.Actions.getLogs({ limit: 1 })).count;
    expect(answer.body.result).toBe(1);
    // The first app's runs per ms while queued (how long its queue would take in FIFO order).
    const drainStart = performance.now();
    const doneAtStart = after;
    await sleep(2000);
    const rate = ((await client.App.Actions.getLogs({ limit: 1 })).count - doneAtStart) / (performance.now() - drainStart);
    rows.push({
      case: "second app's run, first app 500 queued",
      ms: Math.round(waitMs),
      "first app's runs done meanwhile": after - before,
      'one run slot ms': +(1 / rate).toFixed(1),
      'FIFO estimate ms': Math.round((500 - before) / rate),
      'enqueue ms': Math.round(enqueueMs),
    });
    await b.server.close();
  }

  console.log(`\nServer runs (${cores} cores; pool vs inline in the same run)`);
  console.table(rows);
}, 300_000);
