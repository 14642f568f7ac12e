import { existsSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, Page, Request } from 'playwright-core';
import { collectPageErrors, launchChromium, screenshot } from '../helpers/browser.js';
import { startTestBackend, type TestBackend } from '../helpers/server.js';

/**
 * Needs `npx rollup -c` (dist/client.js). The screen and client.js are served by the test itself (page.route),
 * so that the page can be reloaded while the browser context is offline; every call to the backend goes over
 * the (emulated) network.
 */
describe('offline operation in Chromium', () => {
  let b: TestBackend;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;

  beforeAll(async () => {
    if (!existsSync('dist/client.js')) throw new Error('dist/client.js is missing: run npx rollup -c first');
    b = await startTestBackend();
    browser = await launchChromium();
    await b.studio.DataSources.create({ name: 'server-runs' });
    const action = await b.studio.App.Actions.create({
      name: 'record-run',
      environment: 'server',
      functions: [{ functionPackage: 'com.client.function.insert-entry', settings: { dataSourceName: 'server-runs', data: { n: '{{ n }}' } } }],
    });
    await b.studio.App.Actions.publish(action.id, true);
  });
  afterAll(async () => {
    await context?.close();
    await browser?.close();
    await b?.close();
  });

  it('queues run() of a server action while offline, keeps it over a reload, and the backend receives it once when back online', async () => {
    context = await browser.newContext();
    page = await context.newPage();
    const errors = collectPageErrors(page);
    const script = readFileSync('dist/client.js', 'utf8');
    const html = `<!doctype html><title>Offline</title>
      <script src="/app/client.js" data-base-url="${b.url}" data-app-id="${b.server.bootstrap.appId}" data-auth-token="${b.server.bootstrap.apiToken}" data-page-id="3"></script>`;
    await context.route('**/app/screen.html', (route) => route.fulfill({ contentType: 'text/html', body: html }));
    await context.route('**/app/client.js', (route) => route.fulfill({ contentType: 'text/javascript', body: script }));
    const runRequests: Request[] = [];
    context.on('request', (r) => {
      if (r.method() === 'POST' && r.url().endsWith('/tasks/record-run/run')) runRequests.push(r);
    });
    try {
      // The client lists the app's actions when it starts; going offline while that request is in flight fails
      // it, and Chromium logs the failure. Wait for it so that the only offline requests are the ones under test.
      const listed = page.waitForResponse((r) => r.url().includes('/tasks?') && r.request().method() === 'GET');
      await page.goto(`${b.url}/app/screen.html`);
      await page.waitForFunction(() => typeof (window as any).Client?.App?.Actions?.run === 'function');
      await listed;

      await context.setOffline(true);
      expect(await page.evaluate(() => navigator.onLine)).toBe(false);
      // Resolves once queued: nothing can reach the backend.
      await page.evaluate(() => (window as any).Client.App.Actions.run('record-run', { n: 1 }));
      await page.evaluate(() => (window as any).Client.App.Actions.run('record-run', { n: 2 }));
      const ds = await b.client.DataSources.connect('server-runs');
      expect(await ds.find({})).toEqual([]);
      expect(runRequests.filter((r) => !r.failure())).toHaveLength(0);

      // Reloaded while offline: the queue lives in IndexedDB.
      await page.reload();
      await page.waitForFunction(() => typeof (window as any).Client?.App?.Actions?.run === 'function');
      const queued = await page.evaluate(
        (name) =>
          new Promise<number>((resolve, reject) => {
            const open = indexedDB.open(name);
            open.onerror = () => reject(open.error);
            open.onsuccess = () => {
              const count = open.result.transaction('runQueue').objectStore('runQueue').count();
              count.onsuccess = () => resolve(count.result);
            };
          }),
        `in-app-runtime:${b.server.bootstrap.appId}`,
      );
      expect(queued).toBe(2);

      await context.setOffline(false);
      const end = Date.now() + 15_000;
      let found: { data: { n: number } }[] = [];
      while (Date.now() < end) {
        found = (await ds.find({})) as { data: { n: number } }[];
        if (found.length >= 2) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      await new Promise((r) => setTimeout(r, 1000)); // room for a duplicate to appear
      found = (await ds.find({})) as { data: { n: number } }[];
      expect(found.map((e) => e.data.n).sort()).toEqual([1, 2]);
      // Sent in the order they were made, each answered once.
      const answered = runRequests.filter((r) => !r.failure());
      expect(answered.map((r) => (r.postDataJSON() as { payload: { n: number } }).payload.n)).toEqual([1, 2]);
      expect(new Set(answered.map((r) => r.headers()['idempotency-key'])).size).toBe(2);
      expect(errors).toEqual([]);
    } catch (error) {
      await screenshot(page, 'offline-run-queue');
      throw error;
    }
  });
});
