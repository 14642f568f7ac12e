import { createServer, type Server } from 'node:http';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type RunningServer } from '../../src/server/index.js';
import { createClient } from '../../src/index.js';
import { collectPageErrors, launchChromium, onPage } from '../helpers/browser.js';
import { runtimeFiles } from '../helpers/runtime.js';

/**
 * The lazy chunks of client.js (src/core/lazy.ts) in Chromium, on a screen of another origin than the backend
 * that serves /dist/: a screen that records analytics and reads a data source fetches client.js only; a studio
 * screen that creates an invalid action loads the validation chunk and gets the same typed error as before, and
 * its Pipeline.run and function catalog load theirs.
 */
describe('lazy chunks of client.js in Chromium', () => {
  let backend: RunningServer;
  let browser: Browser;
  let screen: Server;
  let screenOrigin: string;
  const pages = new Map<string, string>();
  const files = runtimeFiles();
  const lazy = ['engine', 'wasm', 'query', 'validate', 'pipeline', 'push', 'catalog', 'runs', 'notify'].map((key) => files[key]!);

  async function open(path: string, extra = ''): Promise<{ page: Page; errors: string[]; requested: { method: string; url: string }[] }> {
    const { appId, apiToken } = backend.bootstrap;
    pages.set(
      path,
      `<!doctype html><html><head><title>${path}</title><script src="${backend.url}/dist/client.js" data-base-url="${backend.url}" data-app-id="${appId}" data-auth-token="${apiToken}" ${extra}></script></head><body></body></html>`,
    );
    const page = await browser.newPage();
    const errors = collectPageErrors(page);
    const requested: { method: string; url: string }[] = [];
    page.on('request', (r) => requested.push({ method: r.method(), url: r.url() }));
    await page.goto(screenOrigin + path);
    await page.waitForFunction(() => typeof (window as { Client?: unknown }).Client === 'object');
    return { page, errors, requested };
  }

  beforeAll(async () => {
    expect(lazy.every(Boolean), 'dist/runtime.json names every lazy chunk').toBe(true);
    backend = await startServer({ memory: true, log: false });
    const { appId, apiToken } = backend.bootstrap;
    const api = createClient({ baseUrl: backend.url, appId, authToken: apiToken });
    const visits = await (await api.DataSources.create({ name: 'visits' }), api.DataSources.connect('visits'));
    await visits.insert({ page: 1 });
    const manual = await api.App.Actions.create({
      name: 'manual-only',
      environment: 'client',
      functions: [{ functionPackage: 'com.client.function.return', settings: { value: 1 } }],
    });
    await api.App.Actions.publish(manual.id, true);
    screen = createServer((req, res) => {
      const path = new URL(req.url!, 'http://x').pathname;
      if (path === '/favicon.ico') return void res.writeHead(204).end();
      const html = pages.get(path);
      res.writeHead(html ? 200 : 404, { 'Content-Type': 'text/html; charset=utf-8' }).end(html ?? 'not found');
    });
    screenOrigin = await new Promise((resolve) =>
      screen.listen(0, 'localhost', () => resolve(`http://localhost:${(screen.address() as { port: number }).port}`)),
    );
    browser = await launchChromium();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    screen?.close();
    await backend?.close();
  });

  it('a screen that records analytics and reads a data source fetches no lazy chunk', async () => {
    const { page, errors, requested } = await open('/analytics.html', 'data-page-id="5"');
    await onPage(page, 'lazy-chunks-analytics', async () => {
      const found = await page.evaluate(async () => {
        const Client = (window as any).Client;
        Client.App.Analytics.event({ category: 'form', action: 'submit' });
        const visits = await Client.DataSources.connect('visits');
        const entries = await visits.find({ where: { page: 1 } });
        await Client.App.Analytics.idle();
        return entries.length;
      });
      expect(found).toBe(1);
      // The actions list (for analytics triggers) was read, and the events were delivered.
      expect(requested.some((r) => r.url.includes('/tasks'))).toBe(true);
      const dist = requested.filter((r) => r.url.startsWith(`${backend.url}/dist/`)).map((r) => r.url.slice(`${backend.url}/dist/`.length));
      expect(dist).toEqual(['client.js']);
      expect(errors).toEqual([]);
    });
  });

  it('Actions.create() with an invalid definition loads the validation chunk and rejects with the typed error', async () => {
    const { page, errors, requested } = await open('/studio.html', 'data-auto-page-view="false"');
    await onPage(page, 'lazy-chunks-validate', async () => {
      const result = await page.evaluate(async () => {
        const Client = (window as any).Client;
        const pending = Client.App.Actions.create({
          name: '123',
          triggers: [{ trigger: 'analytics', where: { $where: 'true' } }],
          functions: [{ functionPackage: 'com.client.function.return', retry: { attempts: 'x' } }],
        });
        const error = await pending.catch((e: any) => e);
        const run = Client.App.Actions.Pipeline.run; // a plain function returning a promise
        const runError = await run({ pipeline: 'not nodes' }).catch((e: any) => e);
        const catalog = await Client.App.Tasks.Functions.get();
        return {
          isPromise: pending instanceof Promise,
          isClientError: Client.errors.isClientError(error),
          isInstance: error instanceof Client.errors.ClientError,
          name: error.name,
          code: error.code,
          message: error.message,
          paths: error.details.issues.map((i: { path: string }) => i.path),
          run: { code: runError.code, isInstance: runError instanceof Client.errors.ClientError },
          firstFunction: catalog[0],
        };
      });
      expect(result).toMatchObject({ isPromise: true, isClientError: true, isInstance: true, name: 'ClientError', code: 'INVALID_ACTION' });
      expect(result.paths).toEqual(['name', 'triggers[0].where', 'functions[0].retry.attempts']);
      expect(result.message).toMatch(/^Invalid action: name: must not be made only of digits/);
      expect(result.run).toEqual({ code: 'INVALID_ARGUMENT', isInstance: true });
      expect(requested.map((r) => r.url)).toContain(`${backend.url}/dist/${files.validate}`);
      expect(requested.map((r) => r.url)).toContain(`${backend.url}/dist/${files.pipeline}`);
      // The built-ins' descriptions come with the catalog chunk.
      expect(result.firstFunction).toMatchObject({ id: 1, name: 'If', package: 'com.client.function.if' });
      expect(result.firstFunction.description).toMatch(/^Runs its nested functions/);
      expect(requested.map((r) => r.url)).toContain(`${backend.url}/dist/${files.catalog}`);
      // Refused on the device: nothing was sent to create it; sift came with the validation chunk.
      expect(requested.some((r) => r.method === 'POST' && /\/tasks$/.test(r.url))).toBe(false);
      expect(requested.map((r) => r.url)).not.toContain(`${backend.url}/dist/${files.engine}`);
      expect(errors).toEqual([]);
    });
  });
});
