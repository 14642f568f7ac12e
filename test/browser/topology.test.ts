import { createServer, type Server } from 'node:http';
import { copyFileSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type RunningServer } from '../../src/server/index.js';
import { createClient, type Client } from '../../src/index.js';
import { collectPageErrors, launchChromium, onPage, screenshot } from '../helpers/browser.js';
import { runtimeFiles } from '../helpers/runtime.js';
import { eventually } from '../helpers/wait.js';

/**
 * The deployment topology of issue 13, in Chromium: three origins.
 * - the backend: `startServer()` with no `static` option (it serves its own runtime at /dist/);
 * - the app screen: another origin (an app shell), serving only HTML;
 * - a CDN: a third origin holding a copy of the runtime files, as a CDN would (CORS, no compression).
 * The README's script tag runs client actions and analytics triggers from the screen's origin, with client.js
 * from the backend or the CDN, and the debug page works against that backend.
 */
describe('three origins: screen, backend, CDN copy of the runtime', () => {
  let backend: RunningServer;
  let api: Client;
  let browser: Browser;
  let screenOrigin: string;
  let cdnOrigin: string;
  const servers: Server[] = [];
  /** HTML of the screen's pages, by path. */
  const pages = new Map<string, string>();
  const files = runtimeFiles();

  function listen(server: Server, host: string): Promise<string> {
    servers.push(server);
    return new Promise((resolve) => server.listen(0, host, () => resolve(`http://${host}:${(server.address() as { port: number }).port}`)));
  }

  /** The README's script tag (with the app's client token), on a screen of its own origin. */
  function scriptTag(src: string, extra = ''): string {
    const { appId } = backend.bootstrap;
    return `<script src="${src}" data-base-url="${backend.url}" data-app-id="${appId}" data-auth-token="${backend.bootstrap.clientToken}" ${extra}></script>`;
  }

  async function open(path: string, body: string): Promise<{ page: Page; errors: string[]; requested: string[] }> {
    pages.set(path, `<!doctype html><html><head><title>Screen ${path}</title>${body}</head><body><h1>screen</h1></body></html>`);
    const page = await browser.newPage();
    const errors = collectPageErrors(page);
    const requested: string[] = [];
    page.on('request', (r) => requested.push(r.url()));
    // The engine Worker, started from another origin, got the wasm's bytes and puts its sandboxes back from memory
    // images (src/pipeline/worker-host.ts says so in its console otherwise).
    page.on('console', (m) => {
      if (m.text().includes('memory images off')) errors.push(m.text());
    });
    page.on('response', (r) => {
      if (r.status() >= 400) errors.push(`HTTP ${r.status()} ${r.url()}`);
    });
    await page.goto(screenOrigin + path);
    await page.waitForFunction(() => typeof (window as { Client?: unknown }).Client === 'object');
    return { page, errors, requested };
  }

  beforeAll(async () => {
    backend = await startServer({ memory: true, log: false });
    const { appId } = backend.bootstrap;
    api = createClient({ baseUrl: backend.url, appId, authToken: backend.bootstrap.apiToken });
    // The app screen's origin: HTML only.
    screenOrigin = await listen(
      createServer((req, res) => {
        const path = new URL(req.url!, 'http://x').pathname;
        if (path === '/favicon.ico') return void res.writeHead(204).end();
        const html = pages.get(path);
        res.writeHead(html ? 200 : 404, { 'Content-Type': 'text/html; charset=utf-8' }).end(html ?? 'not found');
      }),
      '127.0.0.1',
    );
    // The CDN: a copy of client.js and the files of dist/runtime.json under /in-app-runtime/0.1.0/.
    const copy = mkdtempSync(join(tmpdir(), 'iar-cdn-'));
    for (const name of ['client.js', ...Object.values(files)]) copyFileSync(join('dist', name), join(copy, name));
    const types: Record<string, string> = { js: 'text/javascript', mjs: 'text/javascript', wasm: 'application/wasm' };
    cdnOrigin = await listen(
      createServer((req, res) => {
        const name = new URL(req.url!, 'http://x').pathname.replace(/^\/in-app-runtime\/0\.1\.0\//, '');
        if (!/^[\w.-]+$/.test(name) || ![...Object.values(files), 'client.js'].includes(name)) return void res.writeHead(404).end();
        res.writeHead(200, { 'Content-Type': types[name.split('.').pop()!]!, 'Access-Control-Allow-Origin': '*' }).end(readFileSync(join(copy, name)));
      }),
      'localhost',
    );
    browser = await launchChromium();

    await api.DataSources.create({ name: 'visits' });
    const actions = [
      await api.App.Actions.create({
        name: 'double',
        environment: 'client',
        functions: [{ functionPackage: 'com.client.function.return', settings: { value: '{{ n * 2 }}' } }],
      }),
      await api.App.Actions.create({
        name: 'on-view-77',
        environment: 'client',
        triggers: [{ trigger: 'analytics', where: { type: 'analytics.pageView', data: { _pageId: 77 } } }],
        functions: [
          { functionPackage: 'com.client.function.insert-entry', settings: { dataSourceName: 'visits', data: { page: '{{ event.data._pageId }}' } } },
        ],
      }),
    ];
    for (const a of actions) await api.App.Actions.publish(a.id, true);
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    for (const s of servers) s.close();
    await backend?.close();
  });

  const runDouble = (page: Page, n: number) =>
    page.evaluate((value) => (window as any).Client.App.Actions.runWithResult('double', { n: value }) as Promise<number>, n);

  it('client.js from the backend: a client action runs in the engine Worker; the page view fires its analytics action', async () => {
    const { page, errors, requested } = await open('/backend.html', scriptTag(`${backend.url}/dist/client.js`, 'data-page-id="77"'));
    await onPage(page, 'topology-backend', async () => {
      expect(await runDouble(page, 21)).toBe(42);
      expect(requested).toContain(`${backend.url}/dist/${files.engine}`);
      expect(requested).toContain(`${backend.url}/dist/${files.wasm}`);
      // The analytics trigger has a where: its matching (sift) is the lazy query chunk, from next to client.js.
      expect(requested).toContain(`${backend.url}/dist/${files.query}`);
      // A cross-origin engine runs as a module Worker started from a same-origin blob.
      expect(page.workers().length).toBeGreaterThan(0);
      await page.evaluate(() => (window as any).Client.App.Analytics.idle());
      const visits = await api.DataSources.connect('visits');
      await eventually(async () => (await visits.find({ where: { page: 77 } })).length === 1, 15_000);
      expect(errors).toEqual([]);
    });
  });

  it('client.js from a CDN copy: the engine and the wasm come from next to it, the API from the backend', async () => {
    const { page, errors, requested } = await open('/cdn.html', scriptTag(`${cdnOrigin}/in-app-runtime/0.1.0/client.js`, 'data-auto-page-view="false"'));
    await onPage(page, 'topology-cdn', async () => {
      expect(await runDouble(page, 5)).toBe(10);
      expect(requested).toContain(`${cdnOrigin}/in-app-runtime/0.1.0/${files.engine}`);
      expect(requested).toContain(`${cdnOrigin}/in-app-runtime/0.1.0/${files.wasm}`);
      expect(requested.some((u) => u.startsWith(`${backend.url}/dist/`))).toBe(false);
      expect(requested.some((u) => u.startsWith(`${backend.url}/v1/`))).toBe(true);
      expect(errors).toEqual([]);
    });
  });

  it('data-assets-url moves the engine and the wasm to another origin than client.js', async () => {
    const { page, errors, requested } = await open(
      '/assets-url.html',
      scriptTag(`${cdnOrigin}/in-app-runtime/0.1.0/client.js`, `data-auto-page-view="false" data-assets-url="${backend.url}/dist/"`),
    );
    await onPage(page, 'topology-assets-url', async () => {
      expect(await runDouble(page, 1)).toBe(2);
      expect(requested).toContain(`${backend.url}/dist/${files.engine}`);
      expect(requested).toContain(`${backend.url}/dist/${files.wasm}`);
      expect(requested.some((u) => u.startsWith(`${cdnOrigin}/in-app-runtime/0.1.0/engine`))).toBe(false);
      expect(errors).toEqual([]);
    });
  });

  /**
   * Loads a screen whose page view stores the actions list on the device, then `second` in the same browser
   * context with the requests matching `held` answered 1.5 s late, runs `act`, and gives the order in which the
   * engine chunk was asked for and the held request answered.
   */
  async function engineVersusHeld(name: string, held: string, second: string, act: (page: Page) => Promise<unknown>): Promise<string[]> {
    const context = await browser.newContext();
    const page = await context.newPage();
    try {
      pages.set(
        `/${name}-first.html`,
        `<!doctype html><html><head>${scriptTag(`${backend.url}/dist/client.js`, 'data-page-id="77"')}</head><body></body></html>`,
      );
      await page.goto(`${screenOrigin}/${name}-first.html`);
      await page.waitForFunction(() => typeof (window as any).Client === 'object');
      await page.evaluate(() => (window as any).Client.App.Analytics.idle());
      const events: string[] = [];
      page.on('request', (r) => {
        if (r.url().includes('/dist/engine-')) events.push('engine requested');
      });
      await page.route(held, async (route) => {
        await new Promise((r) => setTimeout(r, 1500));
        events.push('held answered');
        await route.continue();
      });
      pages.set(`/${name}-second.html`, `<!doctype html><html><head>${second}</head><body></body></html>`);
      await page.goto(`${screenOrigin}/${name}-second.html`);
      await page.waitForFunction(() => typeof (window as any).Client === 'object');
      await act(page);
      await eventually(async () => events.includes('held answered'), 15_000);
      return events.slice(0, 2);
    } catch (error) {
      await screenshot(page, `topology-${name}`);
      throw error;
    } finally {
      await context.close();
    }
  }

  it('a device that stored the actions list starts the engine while the action is fetched', async () => {
    const second = scriptTag(`${backend.url}/dist/client.js`, 'data-auto-page-view="false"');
    const order = await engineVersusHeld('warm', '**/v1/apps/*/tasks/double?*', second, async (page) => expect(await runDouble(page, 4)).toBe(8));
    expect(order).toEqual(['engine requested', 'held answered']);
  });

  it("a page load whose stored list has analytics actions for this device starts the engine during the list's revalidation", async () => {
    // The page waits for the revalidation up to 10 s before matching its page view: without the early start, the
    // engine would only be asked for once the list has answered.
    const second = `${scriptTag(`${backend.url}/dist/client.js`, 'data-page-id="77" data-auto-page-view="false"')}
      <script>Client.configure({ limits: { actionsRevalidateMs: 10000 } }); Client.App.Analytics.pageView();</script>`;
    const order = await engineVersusHeld('reval', '**/v1/apps/*/tasks?*', second, (page) => page.evaluate(() => (window as any).Client.App.Analytics.idle()));
    expect(order).toEqual(['engine requested', 'held answered']);
  });

  it('the debug compile page of a startServer() backend loads its runtime and runs the pipeline', async () => {
    const [action] = (await api.App.Actions.get()).filter((a) => a.name === 'double');
    const page = await browser.newPage();
    const errors = collectPageErrors(page);
    await onPage(page, 'topology-debug-page', async () => {
      const payload = encodeURIComponent(JSON.stringify({ n: 8 }));
      await page.goto(
        `${backend.url}/v1/apps/${backend.bootstrap.appId}/tasks/${action!.id}/compile?html&token=${backend.bootstrap.apiToken}&payload=${payload}`,
      );
      await page.click('#run');
      await page.waitForSelector('#status.ok, #status.failed', { timeout: 15_000 });
      expect(await page.textContent('#status')).toBe('succeeded');
      expect(JSON.parse((await page.textContent('#result'))!)).toBe(16);
      expect(errors).toEqual([]);
    });
  });
});
