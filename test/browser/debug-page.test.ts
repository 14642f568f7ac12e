import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { launchChromium, screenshot } from '../helpers/browser.js';
import { startTestBackend, type TestBackend } from '../helpers/server.js';

/** Needs `npm run build` (dist/client.js) and Client.App.Actions.Pipeline.run (the engine's client part). */
describe('debug compile page in Chromium', () => {
  let b: TestBackend;
  let browser: Browser;
  beforeAll(async () => {
    if (!existsSync('dist/client.js')) throw new Error('dist/client.js is missing: run npm run build first');
    b = await startTestBackend({ static: { mounts: { '/dist/': 'dist', '/cdn/': 'dist' } } });
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await b?.close();
  });

  it('runs the pipeline from its payload parameter and shows the result and the trace', async (ctx) => {
    const action = await b.client.App.Actions.create({
      name: 'debug-browser',
      environment: 'client',
      functions: [
        { functionPackage: 'com.client.function.set', settings: { total: '{{ a + b }}' } },
        { functionPackage: 'com.client.function.return', settings: { value: '{{ total * 10 }}' } },
      ],
    });
    const page = await browser.newPage();
    try {
      const payload = encodeURIComponent(JSON.stringify({ a: 2, b: 3 }));
      await page.goto(`${b.url}/v1/apps/${b.server.bootstrap.appId}/tasks/${action.id}/compile?html&token=${b.server.bootstrap.apiToken}&payload=${payload}`);
      const hasRun = await page.evaluate(() => typeof (window as any).Client?.App?.Actions?.Pipeline?.run === 'function');
      if (!hasRun) ctx.skip('Client.App.Actions.Pipeline.run is not in this build yet');
      await page.click('#run');
      await page.waitForSelector('#status.ok, #status.failed', { timeout: 15_000 });
      expect(await page.textContent('#status')).toBe('succeeded');
      expect(JSON.parse((await page.textContent('#result'))!)).toBe(50);
      const rows = await page.$$eval('#trace tbody tr', (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent)));
      expect(rows.map((r) => [r[0], r[1], r[3]])).toEqual([
        ['functions[0]', 'com.client.function.set', 'ok'],
        ['functions[1]', 'com.client.function.return', 'ok'],
      ]);
      // The console runs it too.
      const fromConsole = await page.evaluate(() => (window as any).Client.App.Actions.Pipeline.run());
      expect(JSON.stringify(fromConsole)).toContain('50');
    } catch (error) {
      await screenshot(page, 'debug-page');
      throw error;
    } finally {
      await page.close();
    }
  });

  it('loads each stored custom function as a named script (DevTools source custom-functions/<package>.js) that Pipeline.run uses', async () => {
    const appId = b.server.bootstrap.appId;
    const code = `async (settings, context) => {
  const label = 'scaled by ' + settings.factor; // a line to break on
  return { scaled: context.n * settings.factor, label };
}`;
    const stored = await b.api('POST', `/v1/apps/${appId}/tasks/functions`, {
      token: b.server.bootstrap.studioToken,
      json: { package: 'com.acme.function.scale', environment: 'any', code },
    });
    expect(stored.status).toBe(201);
    const action = await b.client.App.Actions.create({
      name: 'debug-custom',
      environment: 'client',
      functions: [
        { functionPackage: 'com.acme.function.scale', settings: { factor: 3 } },
        { functionPackage: 'com.client.function.return', settings: { value: '{{ label + ": " + scaled }}' } },
      ],
    });
    const page = await browser.newPage();
    const cdp = await page.context().newCDPSession(page);
    const parsed: { url: string; scriptId: string }[] = [];
    cdp.on('Debugger.scriptParsed', (e) => parsed.push({ url: e.url, scriptId: e.scriptId }));
    await cdp.send('Debugger.enable');
    try {
      const payload = encodeURIComponent(JSON.stringify({ n: 7 }));
      await page.goto(`${b.url}/v1/apps/${appId}/tasks/${action.id}/compile?html&token=${b.server.bootstrap.apiToken}&payload=${payload}`);
      // The function is its own script, named by its sourceURL, holding the stored code.
      // (DevTools protocol events may arrive after the load event.)
      await expect.poll(() => parsed.map((p) => p.url), { timeout: 5000 }).toContain('custom-functions/com.acme.function.scale.js');
      const script = parsed.find((p) => p.url === 'custom-functions/com.acme.function.scale.js');
      const { scriptSource } = await cdp.send('Debugger.getScriptSource', { scriptId: script!.scriptId });
      expect(scriptSource).toContain(code);
      expect(await page.evaluate(() => (window as any).Client.Functions.list().map((f: { package: string }) => f.package))).toEqual(['com.acme.function.scale']);

      await page.click('#run');
      await page.waitForSelector('#status.ok, #status.failed', { timeout: 15_000 });
      expect(await page.textContent('#status')).toBe('succeeded');
      expect(JSON.parse((await page.textContent('#result'))!)).toBe('scaled by 3: 21');
      const rows = await page.$$eval('#trace tbody tr', (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent)));
      expect(rows.map((r) => [r[0], r[1], r[3]])).toEqual([
        ['functions[0]', 'com.acme.function.scale', 'ok'],
        ['functions[1]', 'com.client.function.return', 'ok'],
      ]);
      expect(await page.evaluate(() => (window as any).Client.App.Actions.Pipeline.run({ payload: { n: 2 } }))).toBe('scaled by 3: 6');
    } catch (error) {
      await screenshot(page, 'debug-page-custom');
      throw error;
    } finally {
      await cdp.detach().catch(() => undefined);
      await page.close();
    }
  });

  it('device runs load the engine and the wasm from the configured assetsUrl', async () => {
    const action = await b.client.App.Actions.create({ name: 'assets-url', environment: 'client', functions: [{ functionPackage: 'com.client.function.return', settings: { value: '{{ n + 1 }}' } }] });
    const page = await browser.newPage();
    const requested: string[] = [];
    page.on('request', (r) => requested.push(new URL(r.url()).pathname));
    try {
      await page.goto(`${b.url}/v1/apps/${b.server.bootstrap.appId}/tasks/${action.id}/compile?html&token=${b.server.bootstrap.apiToken}`);
      const result = await page.evaluate(
        ({ appId, token }) => {
          const w = window as any;
          const client = w.Client.createClient({ baseUrl: location.origin, appId, authToken: token, environment: 'viewer', assetsUrl: `${location.origin}/cdn/` });
          return client.App.Actions.runWithResult('assets-url', { n: 41 });
        },
        { appId: b.server.bootstrap.appId, token: b.server.bootstrap.apiToken },
      );
      expect(result).toBe(42);
      expect(requested).toContain('/cdn/engine.mjs');
      expect(requested).toContain('/cdn/quickjs.wasm');
      expect(requested).not.toContain('/dist/engine.mjs');
      expect(page.workers().map((w) => new URL(w.url()).pathname)).toContain('/cdn/engine.mjs');
    } catch (error) {
      await screenshot(page, 'device-assets-url');
      throw error;
    } finally {
      await page.close();
    }
  });
});
