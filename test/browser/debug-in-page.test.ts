import { existsSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, CDPSession, Page } from 'playwright-core';
import { collectPageErrors, launchChromium, onPage } from '../helpers/browser.js';
import { startTestBackend, type TestBackend } from '../helpers/server.js';

type Paused = {
  reason: string;
  hitBreakpoints?: string[];
  callFrames: { functionName: string; location: { scriptId: string; lineNumber: number }; callFrameId: string }[];
};

/** Waits for the next `Debugger.paused` of the session. */
const nextPause = (cdp: CDPSession, timeout = 20_000): Promise<Paused> =>
  new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the page never paused')), timeout);
    cdp.once('Debugger.paused', (event) => {
      clearTimeout(timer);
      resolve(event as unknown as Paused);
    });
  });

/** "Debug in page" on the debug compile page (issue 18, item 4), driven through the DevTools protocol. Needs `npm run build`. */
describe('debug compile page: debug in page (studio tokens), breakpoints that stop', () => {
  let b: TestBackend;
  let browser: Browser;
  beforeAll(async () => {
    if (!existsSync('dist/client.js')) throw new Error('dist/client.js is missing: run npm run build first');
    b = await startTestBackend({ static: { mounts: { '/dist/': 'dist' } } });
    browser = await launchChromium();
    const stored = await b.api('POST', `/v1/apps/${b.server.bootstrap.appId}/tasks/functions`, {
      token: b.server.bootstrap.studioToken,
      json: {
        package: 'com.acme.function.scale',
        environment: 'any',
        code: `(settings, context) => {
  const scaled = context.doubled * settings.factor; // line 2: a breakpoint set by URL
  return { scaled };
}`,
      },
    });
    expect(stored.status).toBe(201);
  });
  afterAll(async () => {
    await browser?.close();
    await b?.close();
  });

  const functions = [
    { functionPackage: 'com.client.function.set', settings: { n: '{{ x + 1 }}' } },
    {
      type: 'loop',
      range: { from: 1, to: 1 },
      functions: [{ functionPackage: 'com.client.function.script', settings: { code: 'const doubled = context.n * 2;\ndebugger;\nreturn { doubled };' } }],
    },
    { functionPackage: 'com.acme.function.scale', settings: { factor: 10 } },
    { functionPackage: 'com.client.function.return', settings: { value: '{{ [n, doubled, scaled] }}' } },
  ];
  const url = (actionId: number, token: string, extra = '') =>
    `${b.url}/v1/apps/${b.server.bootstrap.appId}/tasks/${actionId}/compile?html&token=${token}&payload=${encodeURIComponent('{"x":2}')}${extra}`;

  it('only studio tokens get the mode, labelled not sandboxed; in it `debugger` and a breakpoint by URL stop in the named page scripts', async () => {
    const action = await b.client.App.Actions.create({ name: 'in-page', environment: 'client', functions: functions as never });
    const page = await browser.newPage();
    const errors = collectPageErrors(page);
    await onPage(page, 'debug-in-page', async () => {
      // An API token's page offers no such mode.
      await page.goto(url(action.id, b.server.bootstrap.apiToken));
      expect(await page.$('#in-page')).toBeNull();
      expect(await page.evaluate(() => typeof (window as any).__debugInPage)).toBe('undefined');

      await page.goto(url(action.id, b.server.bootstrap.studioToken));
      expect((await page.textContent('label:has(#in-page)'))!.trim()).toBe('Debug in page (not sandboxed)');
      expect(await page.isChecked('#in-page')).toBe(false);

      const cdp = await page.context().newCDPSession(page);
      const parsed: string[] = [];
      const scripts = new Map<string, string>();
      cdp.on('Debugger.scriptParsed', (e) => {
        parsed.push(e.url);
        scripts.set(e.scriptId, e.url);
      });
      /** Where a pause is: the URL (the sourceURL) of its top frame's script, and the 0-based line. */
      const where = (p: Paused) => [scripts.get(p.callFrames[0]!.location.scriptId), p.callFrames[0]!.location.lineNumber];
      await cdp.send('Debugger.enable');
      // Set before the script exists, as in DevTools: it binds when the page adds the script.
      const { breakpointId } = await cdp.send('Debugger.setBreakpointByUrl', { url: 'pipeline/custom/com.acme.function.scale.js', lineNumber: 1 });

      // Sandboxed (the default), neither the `debugger` statement nor the breakpoint stops: the code runs in QuickJS.
      let pauses = 0;
      const count = () => pauses++;
      cdp.on('Debugger.paused', count);
      await page.click('#run');
      await page.waitForSelector('#status.ok, #status.failed', { timeout: 15_000 });
      expect(await page.textContent('#status')).toBe('succeeded');
      expect(pauses).toBe(0);
      cdp.off('Debugger.paused', count);

      // Debug in page: the script node and the custom function become named scripts of the page.
      await page.check('#in-page');
      expect(await page.textContent('#in-page-scripts')).toBe(
        'Scripts in DevTools (Sources): pipeline/functions[1].functions[0].js, pipeline/custom/com.acme.function.scale.js',
      );
      await expect.poll(() => parsed).toEqual(expect.arrayContaining(['pipeline/functions[1].functions[0].js', 'pipeline/custom/com.acme.function.scale.js']));

      const first = nextPause(cdp);
      // Clicked through the protocol: Playwright's own click waits on page scripts, which the pause stops.
      await cdp.send('Runtime.evaluate', { expression: "document.getElementById('run').click()" });
      const atDebugger = await first;
      expect(atDebugger.reason).toBe('other');
      expect(where(atDebugger), JSON.stringify(atDebugger.callFrames.slice(0, 3))).toEqual(['pipeline/functions[1].functions[0].js', 1]); // `debugger;`, the code's second line
      const local = await cdp.send('Debugger.evaluateOnCallFrame', {
        callFrameId: atDebugger.callFrames[0]!.callFrameId,
        expression: '[doubled, currentItem, currentIndex]',
        returnByValue: true,
      });
      expect(local.result.value).toEqual([6, 1, 0]);
      const second = nextPause(cdp);
      await cdp.send('Debugger.resume');
      const atBreakpoint = await second;
      expect(atBreakpoint.hitBreakpoints).toEqual([breakpointId]);
      expect(where(atBreakpoint)).toEqual(['pipeline/custom/com.acme.function.scale.js', 1]);
      await cdp.send('Debugger.resume');

      await page.waitForSelector('#status.ok, #status.failed', { timeout: 15_000 });
      expect(await page.textContent('#status')).toBe('succeeded');
      expect(JSON.parse((await page.textContent('#result'))!)).toEqual([3, 6, 60]);
      expect(await page.$$eval('#history .mode', (ms) => ms.map((m) => m.textContent))).toEqual(['in page', 'sandbox']);
      await cdp.detach();
      expect(errors).toEqual([]);
    });
  }, 60_000);

  it('the server refuses the mode to an API token (403 STUDIO_ONLY) and opens it preselected for a studio token; it works cross-origin', async () => {
    const action = await b.client.App.Actions.create({ name: 'in-page-flag', environment: 'client', functions: functions as never });
    const refused = await fetch(url(action.id, b.server.bootstrap.apiToken, '&debugInPage=1'), { redirect: 'manual' });
    expect(refused.status).toBe(403);
    expect((await refused.json()).error.code).toBe('STUDIO_ONLY');

    // The page on 127.0.0.1, its backend (publicUrl: client.js, the engine chunk, the wasm, the API) on localhost.
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const { port } = probe.address() as AddressInfo;
        probe.close(() => resolve(port));
      });
    });
    const other = await startTestBackend({ port, publicUrl: `http://localhost:${port}` });
    const page: Page = await browser.newPage();
    const errors = collectPageErrors(page);
    try {
      await onPage(page, 'debug-in-page-cross-origin', async () => {
        const appId = other.server.bootstrap.appId;
        const created = await other.client.App.Actions.create({
          name: 'cross',
          environment: 'client',
          functions: [
            { functionPackage: 'com.client.function.script', settings: { code: 'return { twice: context.n * 2, where: typeof document }' } },
            { functionPackage: 'com.client.function.return', settings: { value: '{{ [twice, where] }}' } },
          ] as never,
        });
        const path = `/v1/apps/${appId}/tasks/${created.id}/compile`;
        const location = (
          await fetch(`${other.url}${path}?html&debugInPage=1&token=${other.server.bootstrap.studioToken}&payload=%7B%22n%22%3A21%7D`, { redirect: 'manual' })
        ).headers.get('location')!;
        await page.goto(`${other.url}${path}${new URL(location).search}`);
        expect(new URL(page.url()).origin).not.toBe(new URL(location).origin);
        expect(await page.isChecked('#in-page')).toBe(true);
        await page.click('#run');
        await page.waitForSelector('#status.ok, #status.failed', { timeout: 15_000 });
        // `document` exists: the script ran in the page, not in QuickJS.
        expect(JSON.parse((await page.textContent('#result'))!)).toEqual([42, 'object']);
        expect(errors).toEqual([]);
      });
    } finally {
      await other.close();
    }
  });
});
