import { createServer, type Server } from 'node:http';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type RunningServer } from '../../src/server/index.js';
import { createClient, type Client } from '../../src/index.js';
import { collectPageErrors, launchChromium, screenshot } from '../helpers/browser.js';
import { eventually } from '../helpers/wait.js';

/**
 * Issue 13 item 5 in Chromium (needs `npm run build`): a screen on another origin than the backend, loaded three
 * times in one browser context (one IndexedDB). Each load revalidates the stored actions list: the ETag must be
 * readable cross-origin (Access-Control-Expose-Headers), If-None-Match must pass the preflight, and Chromium must
 * hand the 304 to the page (a request with its own If-None-Match bypasses the HTTP cache).
 */
describe('fresh actions on each page load, cross-origin, in Chromium', () => {
  let backend: RunningServer;
  let api: Client;
  let browser: Browser;
  let context: BrowserContext;
  let screen: Server;
  let screenOrigin = '';
  /** The actions-list requests of the page loads: If-None-Match sent, status got. */
  const listRequests: { ifNoneMatch?: string; status: number; etag?: string }[] = [];

  beforeAll(async () => {
    backend = await startServer({ memory: true, log: false });
    const { appId, apiToken, clientToken } = backend.bootstrap;
    api = createClient({ baseUrl: backend.url, appId, authToken: apiToken });
    await api.DataSources.create({ name: 'fresh' });
    // The screen's origin (another port: another origin), with the README's script tag and the page's client token.
    const html = `<!doctype html><html><head><title>Fresh</title><script src="${backend.url}/dist/client.js" data-base-url="${backend.url}"
      data-app-id="${appId}" data-auth-token="${clientToken}" data-page-id="5"></script></head><body>screen</body></html>`;
    screen = createServer((req, res) => {
      if (req.url === '/screen.html') return void res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' }).end(html);
      res.writeHead(req.url === '/favicon.ico' ? 204 : 404).end();
    });
    await new Promise<void>((resolve) => screen.listen(0, '127.0.0.1', resolve));
    screenOrigin = `http://127.0.0.1:${(screen.address() as { port: number }).port}`;
    browser = await launchChromium();
    context = await browser.newContext();
    context.on('response', async (response) => {
      const url = new URL(response.url());
      if (response.request().method() !== 'GET' || url.pathname !== `/v1/apps/${appId}/tasks`) return;
      const headers = await response.request().allHeaders();
      listRequests.push({ ifNoneMatch: headers['if-none-match'], status: response.status(), etag: (await response.allHeaders()).etag });
    });
  }, 60_000);

  afterAll(async () => {
    await context?.close();
    await browser?.close();
    await new Promise<void>((resolve) => (screen ? screen.close(() => resolve()) : resolve()));
    await backend?.close();
  });

  /** A page load that records `{ category: 'fresh', action: 'go', tag }` once its automatic page view ran its triggers. */
  async function load(tag: string): Promise<Page> {
    const page = await context.newPage();
    const errors = collectPageErrors(page);
    try {
      await page.goto(`${screenOrigin}/screen.html`);
      await page.waitForFunction(() => typeof (window as any).Client?.App?.Analytics?.event === 'function');
      await page.evaluate(async (t) => {
        const { Analytics } = (window as any).Client.App;
        await Analytics.idle(); // the automatic page view: waits for the list check
        Analytics.event({ category: 'fresh', action: 'go', tag: t });
        await Analytics.idle();
        await Analytics.flush();
      }, tag);
      expect(errors).toEqual([]);
      return page;
    } catch (error) {
      await screenshot(page, `actions-fresh-${tag}`);
      throw error;
    }
  }
  const tags = async () => {
    const ds = await api.DataSources.connect('fresh');
    return (await ds.find({})).map((e) => e.data.tag as string).sort();
  };

  it('an action published after the first load runs on the second; the third gets a 304 and still runs it', async () => {
    const first = await load('p1');
    await first.close();
    await eventually(async () => listRequests.length >= 1); // the response listener reads headers asynchronously
    expect(listRequests).toHaveLength(1);
    expect(listRequests[0]).toMatchObject({ status: 200, ifNoneMatch: undefined });
    expect(listRequests[0]!.etag).toMatch(/^".+"$/);

    const action = await api.App.Actions.create({
      name: 'on-go',
      environment: 'client',
      triggers: [{ trigger: 'analytics', where: { type: 'analytics.event', data: { category: 'fresh', action: 'go' } } }],
      functions: [{ functionPackage: 'com.client.function.insert-entry', settings: { dataSourceName: 'fresh', data: { tag: '{{ event.data.tag }}' } } }],
    });
    await api.App.Actions.publish(action.id, true);

    // Second load, seconds later: the stored list is young, yet it is checked; the ETag was read cross-origin.
    const second = await load('p2');
    await second.close();
    await eventually(async () => listRequests.length >= 2);
    expect(listRequests).toHaveLength(2);
    expect(listRequests[1]).toMatchObject({ status: 200, ifNoneMatch: listRequests[0]!.etag });
    await eventually(async () => (await tags()).includes('p2'), 15_000);

    // Third load, nothing changed: Chromium hands the 304 to the page, which runs from the stored list.
    const third = await load('p3');
    await third.close();
    await eventually(async () => listRequests.length >= 3);
    expect(listRequests).toHaveLength(3);
    expect(listRequests[2]).toMatchObject({ status: 304, ifNoneMatch: listRequests[1]!.etag });
    await eventually(async () => (await tags()).includes('p3'), 15_000);
    expect(await tags()).toEqual(['p2', 'p3']);
  }, 60_000);
});
