import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { collectPageErrors, launchChromium, screenshot } from '../helpers/browser.js';
// @ts-expect-error plain ESM helper shared with `npm start`
import { startDemo } from '../../demo/serve.mjs';

describe('demo page in Chromium', () => {
  let browser: Browser;
  let demo: { server: { url: string; bootstrap: { appId: number; organizationId: number; clientToken: string }; close(): Promise<void> } };
  let page: Page;
  const failed = false;

  beforeAll(async () => {
    demo = await startDemo({ memory: true, log: false });
    browser = await launchChromium();
  });
  afterEach(async (ctx) => {
    if (ctx.task.result?.state === 'fail' || failed) await screenshot(page, `demo-${ctx.task.name}`);
    await page?.close();
  });
  afterAll(async () => {
    await browser?.close();
    await demo?.server.close();
  });

  it('configures window.Client from the script tag and makes an authenticated call', async () => {
    page = await browser.newPage();
    const errors = collectPageErrors(page);
    await page.goto(demo.server.url + '/');
    // Loaded, and "Connected" once nothing waits to be sent (the automatic page view may be on its way first).
    await page.waitForSelector('body[data-ready]');
    await page.waitForSelector('#status[data-state="ok"]');
    expect(await page.textContent('#status')).toBe('Connected');
    expect(await page.textContent('#app-id')).toBe(String(demo.server.bootstrap.appId));
    expect(await page.textContent('#app-name')).toBe('Demo app');
    const config = await page.evaluate(() => {
      const c = (window as unknown as { Client: { config: { appId: number; authToken: string; environment: string }; baseUrl: string } }).Client;
      return { appId: c.config.appId, token: c.config.authToken, env: c.config.environment, baseUrl: c.baseUrl };
    });
    // The page carries the client token (iar_client_…), never the API token.
    expect(config).toEqual({ appId: demo.server.bootstrap.appId, token: demo.server.bootstrap.clientToken, env: 'live', baseUrl: demo.server.url });
    expect(config.token).toMatch(/^iar_client_/);
    expect(errors).toEqual([]);
  });

  it('shows offline and the work queued on the device instead of "Connected", and drains it when back online', async () => {
    page = await browser.newPage();
    const errors = collectPageErrors(page);
    await page.goto(`${demo.server.url}/`);
    // Configured (the header reports the client's status), then the automatic page view is sent first, so
    // that only what this test queues offline is counted.
    await page.waitForSelector('#status[data-online]');
    await page.evaluate(() => (window as unknown as { Client: any }).Client.App.Analytics.flush());
    await page.waitForSelector('#status[data-state="ok"]');
    expect(await page.textContent('#status')).toBe('Connected');

    await page.context().setOffline(true);
    await page.waitForSelector('#status[data-state="offline"]');
    expect(await page.textContent('#status')).toBe('Offline');
    // A server run and an analytics event made offline wait on the device; the header counts them.
    const handle = await page.evaluate(async () => {
      const c = (window as unknown as { Client: any }).Client;
      const run = await c.App.Actions.run('bookings-summary');
      c.App.Analytics.event({ category: 'demo', action: 'offline' });
      await c.App.Analytics.flush();
      return run;
    });
    expect(handle).toEqual({ runId: `queued:${handle.idempotencyKey}`, status: 'queued-offline', idempotencyKey: expect.any(String) });
    await page.waitForFunction(() => document.getElementById('status')!.textContent === 'Offline · 1 queued run, 1 analytics batch waiting');
    expect(await page.getAttribute('#status', 'data-queued-runs')).toBe('1');

    // Back online: the queues drain and the header says so; the handle now names the backend's run.
    await page.context().setOffline(false);
    await page.waitForSelector('#status[data-state="ok"]', { timeout: 15_000 });
    expect(await page.textContent('#status')).toBe('Connected');
    const run = await page.evaluate((runId) => (window as unknown as { Client: any }).Client.App.Actions.getRun(runId), handle.runId);
    expect(run).toMatchObject({ runId: expect.any(Number), source: 'server', actionName: 'bookings-summary' });
    expect(errors.filter((e) => !/Failed to fetch|ERR_INTERNET_DISCONNECTED|NetworkError/.test(e))).toEqual([]);
  });

  it('opened while offline: says "Offline", not "Failed", and loads the app once back online', async () => {
    page = await browser.newPage();
    const context = page.context();
    // The page, client.js and the lazy runs chunk (Client.onStatusChange) load; the device is offline by the
    // time the app first asks the backend.
    const runsChunk = page.waitForResponse((r) => /\/runs-[\w-]+\.mjs$/.test(r.url()), { timeout: 30_000 });
    await page.route(
      '**/v1/apps/**',
      async (route) => {
        await runsChunk;
        await context.setOffline(true);
        await route.abort('internetdisconnected');
      },
      { times: 1 },
    );
    await page.goto(`${demo.server.url}/`);
    await page.waitForSelector('#status[data-state="offline"]', { timeout: 30_000 });
    expect(await page.textContent('#status')).toMatch(/^Offline/);
    expect(await page.isHidden('#app-card')).toBe(true);
    await context.setOffline(false);
    await page.waitForSelector('body[data-ready]', { timeout: 30_000 });
    expect(await page.textContent('#app-name')).toBe('Demo app');
    await page.waitForSelector('#status[data-state="ok"]', { timeout: 30_000 });
    expect(await page.textContent('#status')).toBe('Connected');
  }, 90_000); // a page load, offline, then the app's loads: it took over 20 s beside stress-ng

  it('reads data-* attributes of its own script tag', async () => {
    page = await browser.newPage();
    await page.route('**/tag-test.html', (route) =>
      route.fulfill({
        contentType: 'text/html',
        body: `<!doctype html><script src="/dist/client.js" data-base-url="/" data-app-id="7" data-page-id="3" data-auth-token="t0k" data-environment="viewer"></script>`,
      }),
    );
    await page.goto(demo.server.url + '/tag-test.html');
    const config = await page.evaluate(() => {
      const c = (window as unknown as { Client: { config: Record<string, unknown>; baseUrl: string } }).Client;
      return { appId: c.config.appId, pageId: c.config.pageId, authToken: c.config.authToken, environment: c.config.environment, baseUrl: c.baseUrl };
    });
    expect(config).toEqual({ appId: 7, pageId: 3, authToken: 't0k', environment: 'viewer', baseUrl: demo.server.url });
    // An API error surfaces as a typed error that the guards recognise.
    const error = await page.evaluate(async () => {
      const c = (window as unknown as { Client: any }).Client;
      try {
        await c.App.info();
        return null;
      } catch (e) {
        return { guard: c.errors.isApiError(e), status: (e as any).status, code: (e as any).code };
      }
    });
    expect(error).toEqual({ guard: true, status: 401, code: 'INVALID_TOKEN' });
  });
});
