import { existsSync } from 'node:fs';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHROMIUM, launchChromium } from '../helpers/browser.js';
import { startTestBackend, type TestBackend } from '../helpers/server.js';

/**
 * The debug compile page renders an action name, its functions, a screen's script and the `payload`,
 * `clientUrl` query parameters: none of them may inject markup or script. Checked as text, and in
 * Chromium's real HTML parser (script data states included).
 */

// Names cannot hold "/" (so no closing tags); opening tags and attributes are the vector.
const NAME = `<svg onload="__xss=1"><img src=x onerror="__xss=2">"'&<script>__xss=3`;
const VALUE = `</script><script>window.__xss='settings'</script><!--<script>\u2028\u2029`;
const PAYLOAD = JSON.stringify({ a: `</script><script>window.__xss='payload'</script><img src=x onerror="window.__xss='payload-img'">` });
const CLIENT_URL = `/nowhere.js" onload="window.__xss='clientUrl'`;
const SCREEN = `Client.Page.onRemoteExecution(() => ["<!--<script>", "</script><script>window.__xss='screen'</script>", '</SCRIPT >'].join(""));`;

let b: TestBackend;
let urls: { plain: string; screen: string };
beforeAll(async () => {
  b = await startTestBackend();
  const { appId, apiToken } = b.server.bootstrap;
  const action = await b.api('POST', `/v1/apps/${appId}/tasks`, {
    json: { name: NAME, functions: [{ functionPackage: 'com.client.function.return', settings: { value: VALUE } }] },
  });
  expect(action.status, JSON.stringify(action.body)).toBe(201);
  const page = await b.api('POST', `/v1/apps/${appId}/pages`, { json: { name: 'Screen', script: SCREEN } });
  const screenAction = await b.api('POST', `/v1/apps/${appId}/tasks`, { json: { name: 'screen-xss', pageId: page.body.page.id } });
  const base = `${b.url}/v1/apps/${appId}/tasks`;
  const query = `html&token=${apiToken}&payload=${encodeURIComponent(PAYLOAD)}&clientUrl=${encodeURIComponent(CLIENT_URL)}`;
  urls = { plain: `${base}/${action.body.action.id}/compile?${query}`, screen: `${base}/${screenAction.body.action.id}/compile?${query}` };
});
afterAll(() => b?.close());

describe('compile page escaping (text)', () => {
  it('every rendered value is escaped and every embedded JSON is script-safe', async () => {
    const html = await (await fetch(urls.plain)).text();
    expect(html).not.toContain('<script>window.__xss');
    expect(html).not.toContain('<img');
    expect(html).not.toContain('<svg');
    expect(html).not.toContain('" onload="');
    expect(html).not.toMatch(/<!--/);
    // Exactly the page's own script elements, each closed once.
    expect(html.match(/<script[\s>]/gi)!.length).toBe(3);
    expect(html.match(/<\/script/gi)!.length).toBe(3);
    const screen = await (await fetch(urls.screen)).text();
    expect(screen.match(/<script[\s>]/gi)!.length).toBe(4);
    expect(screen.match(/<\/script/gi)!.length).toBe(4);
  });
});

describe.skipIf(!existsSync(CHROMIUM))('compile page escaping (Chromium)', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(() => browser?.close());

  for (const which of ['plain', 'screen'] as const) {
    it(`${which} action: nothing injected runs, the page's own script runs, values render as text`, async () => {
      const page = await browser.newPage();
      try {
        await page.route('**/nowhere.js*', (route) => route.fulfill({ status: 404, body: '' }));
        // Stands in for client.js: keeps the function the page registers.
        await page.addInitScript(() => {
          (window as any).Client = { Functions: { register: (_pkg: string, fn: unknown) => ((window as any).__registered = fn) } };
        });
        await page.goto(urls[which]);
        await page.waitForFunction(() => document.getElementById('status')?.textContent !== '');
        const seen = await page.evaluate(() => ({
          xss: (window as any).__xss ?? null,
          images: document.querySelectorAll('img').length,
          handlers: [...document.querySelectorAll('*')].filter((e) => [...e.attributes].some((a) => a.name.startsWith('on'))).length,
          scripts: document.scripts.length,
          title: document.title,
          payload: document.getElementById('payload')!.textContent,
          env: (window as any).ENV,
          // Set by the page's last script: proves no earlier script swallowed it.
          pipelineShown: document.getElementById('pipeline')!.textContent !== '',
        }));
        expect(seen.xss).toBeNull();
        expect(seen.images).toBe(0);
        expect(seen.handlers).toBe(0);
        expect(seen.scripts).toBe(which === 'plain' ? 3 : 4);
        expect(seen.payload).toBe(PAYLOAD);
        expect(seen.pipelineShown).toBe(true);
        if (which === 'plain') {
          expect(seen.title).toBe(`Debug: ${NAME}`);
          expect(seen.env.taskName).toBe(NAME);
          expect(seen.env.taskPipeline[0].settings.value).toBe(VALUE);
        } else {
          // The screen's script is kept intact as JavaScript: its strings come out unchanged.
          const result = await page.evaluate(() => (window as any).__registered({}, { payload: {} }));
          expect(result).toBe(`<!--<script></script><script>window.__xss='screen'</script></SCRIPT >`);
        }
      } finally {
        await page.close();
      }
    }, 30_000);
  }
});
