import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { launchChromium, screenshot } from '../helpers/browser.js';
import { runtimeFiles } from '../helpers/runtime.js';
import { startTestBackend, type TestBackend } from '../helpers/server.js';

/** Records the page's Content-Security-Policy violations in `window.__cspViolations` (an init script: CSP does not apply to it). */
async function recordCspViolations(page: Page): Promise<void> {
  await page.addInitScript(() => {
    const seen: string[] = ((window as any).__cspViolations = []);
    document.addEventListener('securitypolicyviolation', (e) => seen.push(`${e.effectiveDirective} ${e.blockedURI}`));
  });
}
const cspViolations = (page: Page): Promise<string[]> => page.evaluate(() => (window as any).__cspViolations);

/** Needs `npm run build` (dist/client.js) and Client.App.Actions.Pipeline.run (the engine's client part); fails without them. */
describe('debug compile page in Chromium', () => {
  let b: TestBackend;
  let browser: Browser;
  let hostDir: string;
  beforeAll(async () => {
    if (!existsSync('dist/client.js')) throw new Error('dist/client.js is missing: run npm run build first');
    // A plain page of the backend's origin (no debug page CSP) for the assetsUrl test.
    hostDir = mkdtempSync(join(tmpdir(), 'debug-page-host-'));
    writeFileSync(join(hostDir, 'index.html'), '<!doctype html><title>host</title><script src="/dist/client.js"></script>');
    b = await startTestBackend({ static: { mounts: { '/dist/': 'dist', '/cdn/': 'dist', '/host/': hostDir } } });
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await b?.close();
    if (hostDir) rmSync(hostDir, { recursive: true, force: true });
  });

  it('runs the pipeline from its payload parameter under its CSP and shows the result and the trace; no token in the address or the page', async () => {
    const action = await b.client.App.Actions.create({
      name: 'debug-browser',
      environment: 'client',
      functions: [
        { functionPackage: 'com.client.function.set', settings: { total: '{{ a + b }}' } },
        { functionPackage: 'com.client.function.return', settings: { value: '{{ total * 10 }}' } },
      ],
    });
    const page = await browser.newPage();
    await recordCspViolations(page);
    const failedRequests: string[] = [];
    page.on('response', (r) => r.status() >= 400 && failedRequests.push(`${r.status()} ${new URL(r.url()).pathname}`));
    try {
      const payload = encodeURIComponent(JSON.stringify({ a: 2, b: 3 }));
      const token = b.server.bootstrap.apiToken;
      const response = await page.goto(`${b.url}/v1/apps/${b.server.bootstrap.appId}/tasks/${action.id}/compile?html&token=${token}&payload=${payload}`);
      // Redirected to a ticket URL, which the page then drops from the address bar.
      const redirect = await response!.request().redirectedFrom()?.response();
      expect(redirect?.status()).toBe(303);
      expect(new URL(response!.url()).searchParams.has('ticket')).toBe(true);
      const address = new URL(page.url());
      expect([...address.searchParams.keys()]).toEqual(['html', 'payload']);
      expect(JSON.parse(address.searchParams.get('payload')!)).toEqual({ a: 2, b: 3 });
      expect(await page.content()).not.toContain(token);
      // Fails (not skips) when the build lacks the engine's client part.
      expect(await page.evaluate(() => typeof (window as any).Client?.App?.Actions?.Pipeline?.run)).toBe('function');
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
      expect(await cspViolations(page)).toEqual([]);
      // No request failed, the favicon Chromium asks for included (204).
      expect(failedRequests).toEqual([]);
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
    await recordCspViolations(page);
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
      expect(await page.evaluate(() => (window as any).Client.Functions.list().map((f: { package: string }) => f.package))).toEqual([
        'com.acme.function.scale',
      ]);

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
      // The stored function ran under the page's CSP (its script carries the nonce).
      expect(await cspViolations(page)).toEqual([]);
    } catch (error) {
      await screenshot(page, 'debug-page-custom');
      throw error;
    } finally {
      await cdp.detach().catch(() => undefined);
      await page.close();
    }
  });

  it('its CSP refuses scripts from elsewhere than dist/, inline scripts without the nonce, and requests to other origins', async () => {
    const action = await b.client.App.Actions.create({ name: 'debug-csp', environment: 'client', functions: [] });
    const page = await browser.newPage();
    await recordCspViolations(page);
    try {
      await page.goto(`${b.url}/v1/apps/${b.server.bootstrap.appId}/tasks/${action.id}/compile?html&token=${b.server.bootstrap.apiToken}`);
      await page.evaluate((url) => {
        const w = window as any;
        const foreign = document.createElement('script');
        foreign.src = `${url}/cdn/client.js`;
        document.head.append(foreign);
        const inline = document.createElement('script');
        inline.textContent = 'window.__inlineRan = true';
        document.head.append(inline);
        w.__fetch = fetch('http://127.0.0.1:9/').then(
          () => 'answered',
          () => 'refused',
        );
      }, b.url);
      expect(await page.evaluate(() => (window as any).__fetch)).toBe('refused');
      await expect
        .poll(() => cspViolations(page))
        .toEqual(expect.arrayContaining([`script-src-elem ${b.url}/cdn/client.js`, 'script-src-elem inline', 'connect-src http://127.0.0.1:9/']));
      expect(await page.evaluate(() => (window as any).__inlineRan)).toBeUndefined();
    } catch (error) {
      await screenshot(page, 'debug-page-csp');
      throw error;
    } finally {
      await page.close();
    }
  });

  it('opened on another origin than publicUrl: client.js, the engine (a blob worker) and the API come from publicUrl under the CSP', async () => {
    // The same server as 127.0.0.1 (where the page is opened) and as localhost (its publicUrl).
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const { port } = probe.address() as AddressInfo;
        probe.close(() => resolve(port));
      });
    });
    const publicUrl = `http://localhost:${port}`;
    const other = await startTestBackend({ port, publicUrl });
    const page = await browser.newPage();
    await recordCspViolations(page);
    try {
      const appId = other.server.bootstrap.appId;
      const action = await other.client.App.Actions.create({
        name: 'cross-origin',
        environment: 'client',
        functions: [{ functionPackage: 'com.client.function.return', settings: { value: '{{ n * 2 }}' } }],
      });
      const path = `/v1/apps/${appId}/tasks/${action.id}/compile`;
      const location = (
        await fetch(`${other.url}${path}?html&token=${other.server.bootstrap.apiToken}&payload=%7B%22n%22%3A21%7D`, { redirect: 'manual' })
      ).headers.get('location')!;
      expect(location.startsWith(`${publicUrl}${path}?`)).toBe(true);
      await page.goto(`${other.url}${path}${new URL(location).search}`);
      expect(new URL(page.url()).origin).toBe(other.url);
      await page.click('#run');
      await page.waitForSelector('#status.ok, #status.failed', { timeout: 15_000 });
      expect(await page.textContent('#result')).toBe('42');
      expect(page.workers().map((w) => w.url().slice(0, 5))).toContain('blob:');
      expect(await cspViolations(page)).toEqual([]);
    } catch (error) {
      await screenshot(page, 'debug-page-cross-origin');
      throw error;
    } finally {
      await page.close();
      await other.close();
    }
  });

  it('device runs load the engine and the wasm from the configured assetsUrl', async () => {
    const action = await b.client.App.Actions.create({
      name: 'assets-url',
      environment: 'client',
      functions: [{ functionPackage: 'com.client.function.return', settings: { value: '{{ n + 1 }}' } }],
    });
    const page = await browser.newPage();
    const requested: string[] = [];
    page.on('request', (r) => requested.push(new URL(r.url()).pathname));
    try {
      // A plain page of the backend's origin: the debug page's CSP allows engines from dist/ only.
      await page.goto(`${b.url}/host/`);
      const result = await page.evaluate(
        ({ appId, token }) => {
          const w = window as any;
          const client = w.Client.createClient({
            baseUrl: location.origin,
            appId,
            authToken: token,
            environment: 'viewer',
            assetsUrl: `${location.origin}/cdn/`,
          });
          return client.App.Actions.runWithResult('assets-url', { n: 41 });
        },
        { appId: b.server.bootstrap.appId, token: b.server.bootstrap.apiToken },
      );
      expect(result).toBe(42);
      const { engine, wasm } = runtimeFiles();
      expect(requested).toContain(`/cdn/${engine}`);
      expect(requested).toContain(`/cdn/${wasm}`);
      expect(requested).not.toContain(`/dist/${engine}`);
      expect(page.workers().map((w) => new URL(w.url()).pathname)).toContain(`/cdn/${engine}`);
    } catch (error) {
      await screenshot(page, 'device-assets-url');
      throw error;
    } finally {
      await page.close();
    }
  });
});
