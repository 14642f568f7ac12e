import { existsSync } from 'node:fs';
import { expect, it } from 'vitest';
import { launchChromium } from '../helpers/browser.js';
import { startTestBackend } from '../helpers/server.js';

/**
 * Issue 7 in the browser: page view → matching client action run to completion in Chromium, where device
 * runs happen in the engine's Web Worker (the Node figure of analytics.bench.ts runs the engine inline).
 * Baseline in the same page: a bare Worker message round trip. Needs dist/ (`npm run bench` builds it).
 */
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

it('page view to client action done, in Chromium (engine in a Worker)', async () => {
  if (!existsSync('dist/client.js')) throw new Error('dist/client.js is missing: run npx rollup -c first');
  const b = await startTestBackend({ static: { mounts: { '/dist/': 'dist' } } });
  const browser = await launchChromium();
  try {
    const action = await b.studio.App.Actions.create({
      name: 'on-view',
      environment: 'client',
      triggers: [{ trigger: 'analytics', where: { type: 'analytics.pageView', data: { _pageId: 9999 } } }],
      functions: [{ functionPackage: 'com.client.function.set', settings: { seen: '{{ event.data._pageId }}' } }],
    });
    await b.studio.App.Actions.publish(action.id, true);
    const { appId, apiToken } = b.server.bootstrap;
    const page = await browser.newPage();
    const html = `<!doctype html><html><head><title>Bench</title>
      <script src="/dist/client.js" data-base-url="/" data-app-id="${appId}" data-auth-token="${apiToken}" data-page-id="9999" data-auto-page-view="false"></script>
      </head><body></body></html>`;
    await page.route('**/bench.html', (route) => route.fulfill({ contentType: 'text/html', body: html }));
    await page.goto(`${b.url}/bench.html`);

    const figures = await page.evaluate(async () => {
      const analytics = (window as any).Client.App.Analytics;
      const timed = async (n: number, once: () => Promise<unknown>) => {
        const times: number[] = [];
        for (let i = 0; i < n; i++) {
          const t0 = performance.now();
          await once();
          times.push(performance.now() - t0);
        }
        return times;
      };
      const view = async () => {
        analytics.pageView({ _pageId: 9999 });
        await analytics.idle();
      };
      const cold = await timed(1, view); // loads the engine chunk and the wasm, starts the Worker
      const warm = await timed(40, view);
      const worker = new Worker(URL.createObjectURL(new Blob(['onmessage = (e) => postMessage(e.data)'], { type: 'text/javascript' })));
      const echo = () => new Promise((resolve) => ((worker.onmessage = resolve), worker.postMessage({ ping: 1 })));
      await timed(20, echo);
      // One round trip is below the browser's timer resolution (100 µs): time 500 and divide.
      const t0 = performance.now();
      for (let i = 0; i < 500; i++) await echo();
      const baseline = (performance.now() - t0) / 500;
      worker.terminate();
      return { cold: cold[0]!, warm: warm.slice(10), baseline };
    });
    const runs = await b.client.App.Actions.getLogs({ id: action.id, limit: 100 });
    const warm = median(figures.warm);
    const base = figures.baseline;
    console.log('\nAnalytics in Chromium (page view → client action done in the engine Worker)');
    console.table([
      { case: 'first page view (loads engine chunk + wasm, starts the Worker)', ms: +figures.cold.toFixed(2), baseline: '', 'baseline ms': NaN, ratio: NaN },
      {
        case: 'page view → 1-node action done (warm, median of 30)',
        ms: +warm.toFixed(3),
        baseline: 'bare Worker message round trip (mean of 500)',
        'baseline ms': +base.toFixed(3),
        ratio: +(warm / base).toFixed(1),
      },
    ]);
    expect(figures.warm).toHaveLength(30);
    // Every page view ran the action (logged on the device, uploaded in the background).
    expect(runs.count).toBeGreaterThan(0);
  } finally {
    await browser.close();
    await b.close();
  }
}, 300_000);
