import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startServer, type RunningServer } from '../../src/server/index.js';
import { collectPageErrors, launchChromium } from '../helpers/browser.js';
import { runtimeFiles } from '../helpers/runtime.js';
import { cases } from './pipeline-page/cases.mjs';

/** The shared pipeline suite (test/unit/pipeline-cases.test.ts) in Chromium: dist/client.js loads its engine chunk as a module Worker. */
describe('pipeline engine in Chromium (Web Worker)', () => {
  let server: RunningServer;
  let browser: Browser;
  let page: Page;
  let errors: string[];
  const requested: string[] = [];
  const files = runtimeFiles();
  const engine = `/dist/${files.engine}`;
  const wasm = `/dist/${files.wasm}`;

  beforeAll(async () => {
    server = await startServer({ memory: true, log: false, static: { mounts: { '/dist/': 'dist', '/': 'test/browser/pipeline-page' } } });
    browser = await launchChromium();
    page = await browser.newPage();
    errors = collectPageErrors(page);
    page.on('request', (r) => requested.push(new URL(r.url()).pathname));
    await page.goto(`${server.url}/index.html`);
    await page.waitForFunction(() => (window as unknown as { pageReady?: boolean }).pageReady === true);
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  test('the engine and the wasm are fetched only when the first pipeline runs', async () => {
    expect(requested).toContain('/dist/client.js');
    expect(requested).not.toContain(engine);
    expect(requested).not.toContain(wasm);
    const { outcome } = await page.evaluate((name) => (window as any).runCase(name), cases[0]!.name);
    expect(outcome.ok).toBe(true);
    expect(requested).toContain(engine);
    expect(requested).toContain(wasm);
    expect(page.workers().map((w) => new URL(w.url()).pathname)).toContain(engine);
  });

  for (const c of cases) {
    test(c.name, async () => {
      const { outcome, calls } = await page.evaluate((name) => (window as any).runCase(name), c.name);
      c.check(outcome, calls);
    });
  }

  test('a long run does not block the page', async () => {
    const before = Number(await page.textContent('#ticks'));
    const outcome = await page.evaluate(() =>
      (window as any).Client.App.Actions.Pipeline.runWithTrace({
        pipeline: [{ functionPackage: 'com.client.function.script', settings: { code: 'const end = Date.now() + 600; while (Date.now() < end) {} return 1' } }],
        log: false,
        services: { dataSources: { connect() {} }, notifications: {} },
      }),
    );
    expect(outcome.ok).toBe(true);
    const after = Number(await page.textContent('#ticks'));
    expect(after - before).toBeGreaterThan(20);
    // (Resource errors come from the script tag's automatic page view without a token; no script error may occur.)
    expect(errors.filter((e) => e.startsWith('pageerror'))).toEqual([]);
  });
});
