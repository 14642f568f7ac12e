import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startServer, type RunningServer } from '../../src/server/index.js';
import { collectPageErrors, launchChromium } from '../helpers/browser.js';
import { runtimeFiles } from '../helpers/runtime.js';

/**
 * The device engine's Web Worker in Chromium (dist/client.js + dist/engine.mjs): what happens when the Worker
 * cannot start, and how a run's AbortSignal is honoured in Worker mode.
 */
declare const Client: any;

/** A page-side run of a small pipeline, with a deadline so a hang shows as `'hung'` instead of a test timeout. */
const RUN = `window.runSmall = (extra = {}, ms = 8000) => Promise.race([
  Client.App.Actions.Pipeline.runWithTrace({
    pipeline: [{ functionPackage: 'com.client.function.return', settings: { value: '{{ n * 2 }}' } }],
    payload: { n: 21 },
    log: false,
    services: { dataSources: { connect() {} }, notifications: {} },
    ...extra,
  }),
  new Promise((resolve) => setTimeout(() => resolve('hung'), ms)),
]);`;

/** A browser whose engine Worker never starts: it reports a load error, as Chromium does for a module Worker that fails to load. */
const FAILING_WORKER = `window.__workers = 0; window.__terminated = 0;
window.Worker = class FailingWorker extends EventTarget {
  constructor() { super(); window.__workers++; setTimeout(() => this.dispatchEvent(new Event('error')), 50); }
  postMessage() {}
  terminate() { window.__terminated++; }
};`;

describe('device engine Worker in Chromium', () => {
  const engine = `/dist/${runtimeFiles().engine}`;
  let server: RunningServer;
  let browser: Browser;
  const pages: Page[] = [];

  async function open(init?: string, path = '/index.html'): Promise<{ page: Page; errors: string[]; infos: string[] }> {
    const page = await browser.newPage();
    pages.push(page);
    const errors = collectPageErrors(page);
    const infos: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'info') infos.push(m.text());
    });
    if (init) await page.addInitScript(init);
    await page.goto(`${server.url}${path}`);
    await page.waitForFunction(() => (window as unknown as { pageReady?: boolean }).pageReady === true);
    await page.evaluate(RUN);
    return { page, errors, infos };
  }

  beforeAll(async () => {
    server = await startServer({ memory: true, log: false, static: { mounts: { '/dist/': 'dist', '/': 'test/browser/pipeline-page' } } });
    browser = await launchChromium();
  }, 60_000);
  afterAll(async () => {
    for (const page of pages) await page.close().catch(() => undefined);
    await browser?.close();
    await server?.close();
  });

  test('when the engine Worker fails to start, the run in flight and every later run complete inline; one message is logged', async () => {
    const { page, errors, infos } = await open(FAILING_WORKER);
    // The first run is posted to the Worker before its error arrives: it never started there, so it runs inline.
    const first = await page.evaluate(() => (window as any).runSmall());
    expect(first).toMatchObject({ ok: true, result: 42 });
    const later = await page.evaluate(() => Promise.all([1, 2, 3].map((n) => (window as any).runSmall({ payload: { n } }))));
    expect(later.map((o: any) => o.result)).toEqual([2, 4, 6]);
    // The dead Worker is not retried, and was terminated.
    expect(await page.evaluate(() => [(window as any).__workers, (window as any).__terminated])).toEqual([1, 1]);
    expect(infos.filter((m) => m.includes('Worker could not start'))).toHaveLength(1);
    expect(errors.filter((e) => e.startsWith('pageerror'))).toEqual([]);
  });

  test('runs started after the Worker failed go straight to the inline engine', async () => {
    const { page } = await open(FAILING_WORKER);
    // Load the engine (one run), let the Worker's error arrive, then run again: no hang, no second Worker.
    await page.evaluate(() => (window as any).runSmall());
    await page.waitForTimeout(200);
    const outcomes = await page.evaluate(() => Promise.all([(window as any).runSmall(), (window as any).runSmall({ payload: { n: 5 } })]));
    expect(outcomes.map((o: any) => o.result)).toEqual([42, 10]);
    expect(await page.evaluate(() => (window as any).__workers)).toBe(1);
  });

  test('a page whose CSP refuses Workers still runs pipelines (inline)', async () => {
    const page = await browser.newPage();
    pages.push(page);
    const infos: string[] = [];
    page.on('console', (m) => infos.push(`${m.type()}: ${m.text()}`));
    await page.route(`${server.url}/csp.html`, (route) =>
      route.fulfill({
        contentType: 'text/html',
        body: `<!doctype html><meta http-equiv="Content-Security-Policy" content="worker-src 'none'">
<script src="/dist/client.js" data-base-url="/" data-app-id="1"></script><script>window.pageReady = true;</script>`,
      }),
    );
    await page.goto(`${server.url}/csp.html`);
    await page.waitForFunction(() => (window as unknown as { pageReady?: boolean }).pageReady === true);
    await page.evaluate(RUN);
    const outcomes = await page.evaluate(() => Promise.all([(window as any).runSmall(), (window as any).runSmall({ payload: { n: 1 } })]));
    expect(outcomes.map((o: any) => o.result)).toEqual([42, 2]);
    const again = await page.evaluate(() => (window as any).runSmall({ payload: { n: 2 } }));
    expect(again).toMatchObject({ ok: true, result: 4 });
    expect(page.workers()).toEqual([]);
    // Chromium reports the refused module Worker with an error event: one message says the runs moved to the page.
    const engineMessages = infos.filter((m) => m.includes('pipelines run'));
    expect(engineMessages).toHaveLength(1);
    expect(engineMessages[0]).toContain('Worker could not start');
  });

  test('in Worker mode runs are put back from memory images (the Worker got the layout) and see nothing of earlier runs', async () => {
    const { page, infos } = await open();
    const seen = await page.evaluate(async () => {
      const out: unknown[] = [];
      for (let i = 0; i < 5; i++) {
        const o = await (window as any).runSmall({
          pipeline: [
            {
              functionPackage: 'com.client.function.script',
              settings: {
                code: 'const seen = globalThis.mark ?? null; const proto = ({}).p === 1 ? "stale" : null; globalThis.mark = 1; Object.prototype.p = 1; return { seen, proto }',
              },
            },
          ],
        });
        out.push(o.ok ? o.result : o.error);
      }
      return out;
    });
    expect(seen).toEqual(Array(5).fill({ seen: null, proto: null }));
    expect(page.workers().map((w) => new URL(w.url()).pathname)).toContain(engine);
    // The Worker says when it cannot save images (src/pipeline/device.ts, 'warmed'): it said nothing.
    expect(infos.filter((m) => m.includes('memory images'))).toEqual([]);
  });

  test('in Worker mode a signal that is already aborted ends the run with ABORTED, as inline', async () => {
    const { page } = await open();
    expect(await page.evaluate(() => (window as any).runSmall())).toMatchObject({ ok: true, result: 42 });
    expect(page.workers().map((w) => new URL(w.url()).pathname)).toContain(engine);
    const outcome = await page.evaluate(() => {
      const controller = new AbortController();
      controller.abort();
      return (window as any).runSmall({ signal: controller.signal });
    });
    expect(outcome).toMatchObject({ ok: false, error: { code: 'ABORTED', errorType: 'AbortError' } });
  });

  test('in Worker mode a run removes its abort listener when it ends (a reused signal collects none)', async () => {
    const { page } = await open();
    const counts = await page.evaluate(async () => {
      const controller = new AbortController();
      const signal = controller.signal;
      let listeners = 0;
      const add = signal.addEventListener.bind(signal);
      const remove = signal.removeEventListener.bind(signal);
      signal.addEventListener = ((type: string, listener: EventListener, options?: AddEventListenerOptions) => {
        if (type === 'abort') listeners++;
        add(type, listener, options);
      }) as typeof signal.addEventListener;
      signal.removeEventListener = ((type: string, listener: EventListener, options?: EventListenerOptions) => {
        if (type === 'abort') listeners--;
        remove(type, listener, options);
      }) as typeof signal.removeEventListener;
      const results = [];
      for (let n = 0; n < 5; n++) results.push((await (window as any).runSmall({ signal, payload: { n } })).result);
      return { results, listeners };
    });
    expect(page.workers().map((w) => new URL(w.url()).pathname)).toContain(engine);
    expect(counts).toEqual({ results: [0, 2, 4, 6, 8], listeners: 0 });
  });
});
