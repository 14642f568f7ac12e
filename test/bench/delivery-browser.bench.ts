import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createTcpServer, connect, type Server as TcpServer } from 'node:net';
import { statSync } from 'node:fs';
import type { Browser } from 'playwright-core';
import { expect, it } from 'vitest';
import { startServer } from '../../src/server/index.js';
import { createClient } from '../../src/index.js';
import { launchChromium } from '../helpers/browser.js';
import { runtimeFiles } from '../helpers/runtime.js';

/**
 * Issue 13: the runtime delivered like a CDN would, measured in Chromium across origins. A screen on its own
 * origin loads the README's script tag from the backend and runs a client action at once. Each figure is
 * "page load → first client run finished" (performance.now() at the run's end, i.e. from navigation start)
 * and the bytes the backend sent for it (counted by a TCP proxy in front of it: headers, bodies, everything).
 * Cold: a new browser context (empty HTTP cache and IndexedDB). Warm: the same page loaded again in it.
 * Baselines in the same run: an empty screen's load event on the same origins, and the bytes of the
 * runtime files uncompressed (what the backend used to send). Needs dist/ (`npm run bench` builds it).
 */
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const LOADS = 7;

/** A byte-counting TCP proxy to `port`. */
async function countingProxy(port: number): Promise<{ url: string; down: () => number; up: () => number; reset: () => void; server: TcpServer }> {
  let down = 0;
  let up = 0;
  const server = createTcpServer((socket) => {
    const upstream = connect(port, '127.0.0.1');
    socket.on('data', (d) => (up += d.length));
    upstream.on('data', (d) => (down += d.length));
    socket.pipe(upstream).pipe(socket);
    socket.on('error', () => upstream.destroy());
    upstream.on('error', () => socket.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    down: () => down,
    up: () => up,
    reset: () => ((down = 0), (up = 0)),
    server,
  };
}

it('runtime delivery across origins: cold and warm page load → first client run', async () => {
  const backend = await startServer({ memory: true, log: false });
  const proxy = await countingProxy(backend.port);
  const { appId, apiToken, clientToken } = backend.bootstrap;
  const api = createClient({ baseUrl: backend.url, appId, authToken: apiToken });
  const action = await api.App.Actions.create({
    name: 'first-run',
    environment: 'client',
    functions: [{ functionPackage: 'com.client.function.return', settings: { value: '{{ n + 1 }}' } }],
  });
  await api.App.Actions.publish(action.id, true);

  const screens: Record<string, string> = {
    '/app.html': `<!doctype html><html><head><title>Screen</title>
      <script src="${proxy.url}/dist/client.js" data-base-url="${proxy.url}" data-app-id="${appId}" data-auth-token="${clientToken}" data-auto-page-view="false"></script>
      <script>Client.App.Actions.runWithResult('first-run', { n: 1 }).then((r) => { window.result = r; window.done = performance.now(); }, (e) => { window.failed = String(e && e.message); });</script>
      </head><body>screen</body></html>`,
    '/empty.html': `<!doctype html><html><head><title>Empty</title></head><body>empty</body></html>`,
    // The floor of any sandboxed first run: fetch the same wasm from the backend, compile it, hand it to a blank
    // Worker. No engine, no QuickJS instance, no API call, no run.
    '/floor.html': `<!doctype html><html><head><title>Floor</title><script>
      fetch('${proxy.url}/dist/${runtimeFiles().wasm}').then((r) => WebAssembly.compileStreaming(r)).then((m) => {
        const w = new Worker(URL.createObjectURL(new Blob(['onmessage = () => postMessage(1)'], { type: 'text/javascript' })));
        w.onmessage = () => { window.done = performance.now(); };
        w.postMessage(m);
      }, (e) => { window.failed = String(e && e.message); });
      </script></head><body>floor</body></html>`,
  };
  const screen: Server = createHttpServer((req, res) => {
    const html = screens[new URL(req.url!, 'http://x').pathname];
    res.writeHead(html ? 200 : 204, { 'Content-Type': 'text/html; charset=utf-8' }).end(html ?? '');
  });
  await new Promise<void>((resolve) => screen.listen(0, '127.0.0.1', resolve));
  const screenUrl = `http://127.0.0.1:${(screen.address() as { port: number }).port}`;

  let browser: Browser | undefined;
  try {
    browser = await launchChromium();
    const cold: { ms: number; bytes: number }[] = [];
    const warm: { ms: number; bytes: number }[] = [];
    const floorCold: { ms: number; bytes: number }[] = [];
    const floorWarm: { ms: number; bytes: number }[] = [];
    const empty: number[] = [];
    for (let i = 0; i < LOADS * 2; i++) {
      const screenPath = i % 2 === 0 ? '/app.html' : '/floor.html';
      const context = await browser.newContext();
      const page = await context.newPage();
      for (const [kind, into] of [
        ['cold', i % 2 === 0 ? cold : floorCold],
        ['warm', i % 2 === 0 ? warm : floorWarm],
      ] as const) {
        proxy.reset();
        await page.goto(`${screenUrl}${screenPath}`);
        await page.waitForFunction(() => (window as any).done !== undefined || (window as any).failed !== undefined, undefined, { timeout: 30_000 });
        const { done, failed, result } = await page.evaluate(() => ({
          done: (window as any).done,
          failed: (window as any).failed,
          result: (window as any).result,
        }));
        if (failed) throw new Error(`${screenPath} ${kind} failed: ${failed}`);
        if (screenPath === '/app.html') expect(result).toBe(2);
        // Let the run's log upload finish, so its bytes count for this load.
        await page.evaluate(() => new Promise((r) => setTimeout(r, 600)));
        into.push({ ms: done as number, bytes: proxy.down() + proxy.up() });
      }
      await page.goto(`${screenUrl}/empty.html`);
      empty.push(await page.evaluate(() => performance.getEntriesByType('navigation')[0]!.toJSON().loadEventEnd as number));
      await context.close();
    }
    const files = runtimeFiles();
    const identityBytes = ['client.js', files.engine, files.wasm].reduce((sum, f) => sum + statSync(`dist/${f}`).size, 0);
    const row = (name: string, xs: { ms: number; bytes: number }[], floor: { ms: number }[], goalMs: number, goalKb: number) => {
      const ms = median(xs.map((x) => x.ms));
      const kb = median(xs.map((x) => x.bytes)) / 1024;
      return {
        case: name,
        'median ms': +ms.toFixed(1),
        'goal ms': goalMs,
        'KB on the wire': +kb.toFixed(1),
        'goal KB': goalKb,
        'x empty-page load': +(ms / median(empty)).toFixed(1),
        'x wasm floor': +(ms / median(floor.map((x) => x.ms))).toFixed(1),
        'x uncompressed runtime bytes': +((kb * 1024) / identityBytes).toFixed(3),
      };
    };
    console.log(`\nRuntime delivery in Chromium, screen and backend on separate origins (median of ${LOADS} loads)`);
    console.table([
      row('cold cache: page load → first client run done', cold, floorCold, 300, 260),
      row('warm cache: page load → first client run done', warm, floorWarm, 80, 5),
    ]);
    console.log(
      `baselines: empty screen load event ${median(empty).toFixed(1)} ms; runtime files uncompressed ${(identityBytes / 1024).toFixed(1)} KB ` +
        `(client.js + ${files.engine} + ${files.wasm}); wasm floor (fetch + compile the wasm, post it to a blank Worker) ` +
        `cold ${median(floorCold.map((x) => x.ms)).toFixed(1)} ms, warm ${median(floorWarm.map((x) => x.ms)).toFixed(1)} ms`,
    );
    expect(cold).toHaveLength(LOADS);
  } finally {
    await browser?.close();
    screen.close();
    proxy.server.close();
    await backend.close();
  }
}, 300_000);
