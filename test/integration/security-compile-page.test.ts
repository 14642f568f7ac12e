import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../helpers/browser.js';
import { startServer } from '../../src/server/index.js';
import { startTestBackend, type TestBackend } from '../helpers/server.js';

/**
 * The debug compile page renders an action name, its functions, a screen's script and the `payload` query
 * parameter: none of them may inject markup or script. Checked as text, and in Chromium's real HTML parser
 * (script data states included). Then its hardening (docs/security.md, "Debug compile page"): no `clientUrl`,
 * URLs from the configured public URL only, security headers, the opening token exchanged for a ticket and a
 * short-lived page token.
 */

// Names cannot hold "/" (so no closing tags); opening tags and attributes are the vector.
const NAME = `<svg onload="__xss=1"><img src=x onerror="__xss=2">"'&<script>__xss=3`;
const VALUE = `</script><script>window.__xss='settings'</script><!--<script>\u2028\u2029`;
const PAYLOAD = JSON.stringify({ a: `</script><script>window.__xss='payload'</script><img src=x onerror="window.__xss='payload-img'">` });
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
  const query = `html&token=${apiToken}&payload=${encodeURIComponent(PAYLOAD)}`;
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

// Chromium is required (launchChromium fails with the install hint when it is missing): no silent skip.
describe('compile page escaping (Chromium)', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(() => browser?.close());

  for (const which of ['plain', 'screen'] as const) {
    it(`${which} action: nothing injected runs, the page's own script runs, values render as text`, async () => {
      const page = await browser.newPage();
      try {
        await page.route(`${b.url}/dist/client.js`, (route) => route.fulfill({ status: 404, body: '' }));
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
          payload: (document.getElementById('payload') as HTMLTextAreaElement).value,
          env: (window as any).ENV,
          // Set by the page's last script: proves no earlier script swallowed it.
          pipelineShown: document.getElementById('pipeline')!.textContent !== '',
        }));
        expect(seen.xss).toBeNull();
        expect(seen.images).toBe(0);
        expect(seen.handlers).toBe(0);
        expect(seen.scripts).toBe(which === 'plain' ? 3 : 4);
        // The payload editor holds it, pretty-printed.
        expect(JSON.parse(seen.payload)).toEqual(JSON.parse(PAYLOAD));
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

/** GET without following redirects. */
const get = (url: string, headers: Record<string, string> = {}) => fetch(url, { redirect: 'manual', headers });

/** A GET sent with another Host header than the server's (fetch forbids setting Host), over node:http. */
function getWithHost(url: string, host: string): Promise<{ status: number; headers: IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: 'GET', headers: { host } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** `directive → sources` of a Content-Security-Policy header. */
function parseCsp(header: string | null): Record<string, string[]> {
  return Object.fromEntries(
    (header ?? '')
      .split(';')
      .map((d) => d.trim().split(/\s+/))
      .filter((d) => d[0])
      .map(([name, ...sources]) => [name!, sources]),
  );
}

const pageTokenOf = (html: string) => html.match(/data-auth-token="([^"]*)"/)![1]!;

describe('compile page hardening', () => {
  let appId: number;
  let actionId: number;
  let otherActionId: number;
  let compile: (id?: number) => string;
  beforeAll(async () => {
    appId = b.server.bootstrap.appId;
    actionId = (await b.client.App.Actions.create({ name: 'harden', functions: [{ functionPackage: 'com.client.function.return', settings: { value: 1 } }] }))
      .id;
    otherActionId = (await b.client.App.Actions.create({ name: 'harden-other' })).id;
    compile = (id = actionId) => `${b.url}/v1/apps/${appId}/tasks/${id}/compile`;
  });

  /** Opens the page as a browser does: `?token=` answers 303 to a ticket URL, which answers the page. */
  async function open(token: string, query = 'html') {
    const redirect = await get(`${compile()}?${query}&token=${encodeURIComponent(token)}`);
    expect(redirect.status, await redirect.clone().text()).toBe(303);
    const location = redirect.headers.get('location')!;
    const page = await get(location);
    expect(page.status).toBe(200);
    return { redirect, location, page, html: await page.text() };
  }

  it('refuses the clientUrl parameter (400 UNSUPPORTED_PARAMETER), a data: URL included', async () => {
    const { apiToken } = b.server.bootstrap;
    for (const value of ['data:text/javascript,window.stolen=document.scripts[1].dataset.authToken', 'https://evil.example/client.js', '']) {
      const res = await get(`${compile()}?html&token=${apiToken}&clientUrl=${encodeURIComponent(value)}`);
      expect(res.status).toBe(400);
      expect((await res.json()).error).toMatchObject({ code: 'UNSUPPORTED_PARAMETER', message: expect.stringContaining('clientUrl') });
    }
    const header = await get(`${compile()}?html&clientUrl=data:text/javascript,1`, { 'Auth-token': apiToken });
    expect(header.status).toBe(400);
  });

  it('exchanges ?token= for a ticket (303, no token in the new URL) and keeps the token out of the page', async () => {
    const { apiToken, studioToken } = b.server.bootstrap;
    for (const token of [apiToken, studioToken]) {
      const payload = encodeURIComponent('{"n":1}');
      const { redirect, location, page, html } = await open(token, `html&payload=${payload}&environment=viewer`);
      expect(location).toMatch(
        new RegExp(
          `^${b.url}/v1/apps/${appId}/tasks/${actionId}/compile\\?html&payload=${payload.replace(/%/g, '%')}&environment=viewer&ticket=iar_ticket_[\\w-]+\\.[\\w-]+$`,
        ),
      );
      expect(location).not.toContain(token);
      expect(redirect.headers.get('referrer-policy')).toBe('no-referrer');
      expect(redirect.headers.get('cache-control')).toBe('no-store');
      // The page holds neither the opening token nor the ticket; only its own page token.
      expect(html).not.toContain(token);
      expect(html).not.toContain('iar_ticket_');
      expect(pageTokenOf(html)).toMatch(/^iar_debug_[\w-]+\.[\w-]+$/);
      expect(page.headers.get('cache-control')).toBe('no-store');
      // The page script drops ticket and token from the address bar.
      expect(html).toContain("u.searchParams.delete('ticket'); u.searchParams.delete('token'); history.replaceState(");
    }
    // The Auth-token header opens the page directly (nothing to take out of the URL).
    const direct = await get(`${compile()}?html`, { 'Auth-token': apiToken });
    expect(direct.status).toBe(200);
    expect(await direct.text()).not.toContain(apiToken);
  });

  it('serves the page with no-referrer, no framing, nosniff and a nonce-based CSP covering every script and style', async () => {
    const first = await open(b.server.bootstrap.apiToken);
    const { page, html } = first;
    expect(page.headers.get('referrer-policy')).toBe('no-referrer');
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    expect(page.headers.get('x-content-type-options')).toBe('nosniff');
    const csp = parseCsp(page.headers.get('content-security-policy'));
    const nonce = csp['script-src']!.find((s) => s.startsWith("'nonce-"))!.slice(7, -1);
    expect(nonce).toMatch(/^[A-Za-z0-9+/]{24}$/);
    expect(csp).toEqual({
      'default-src': ["'none'"],
      'script-src': [`'nonce-${nonce}'`, `${b.url}/dist/`, "'wasm-unsafe-eval'"],
      'worker-src': [`${b.url}/dist/`, 'blob:'],
      'connect-src': [`${b.url}/`],
      'style-src': [`'nonce-${nonce}'`],
      'object-src': ["'none'"],
      'base-uri': ["'none'"],
      'form-action': ["'none'"],
      'frame-ancestors': ["'none'"],
    });
    const tags = [...html.matchAll(/<(script|style)\b([^>]*)>/g)];
    expect(tags.length).toBe(4); // style, ENV, client.js, the page script
    for (const [, , attributes] of tags) expect(attributes).toContain(`nonce="${nonce}"`);
    expect(html).toContain(`<script nonce="${nonce}" src="${b.url}/dist/client.js" data-base-url="${b.url}"`);
    // A fresh nonce per response.
    const again = await open(b.server.bootstrap.apiToken);
    expect(parseCsp(again.page.headers.get('content-security-policy'))['script-src']![0]).not.toBe(`'nonce-${nonce}'`);
  });

  it('builds every URL from the configured public URL, whatever the Host header says', async () => {
    const evil = 'evil.example:1';
    const redirect = await getWithHost(`${compile()}?html&token=${b.server.bootstrap.apiToken}`, evil);
    expect(redirect.status).toBe(303);
    expect(redirect.headers.location).toMatch(new RegExp(`^${b.url}/v1/apps/${appId}/tasks/${actionId}/compile\\?html&ticket=`));
    const page = await getWithHost(redirect.headers.location!, evil);
    expect(page.status).toBe(200);
    expect(page.body).not.toContain('evil.example');
    expect(page.headers['content-security-policy']).not.toContain('evil.example');
    expect(page.body).toContain(`src="${b.url}/dist/client.js" data-base-url="${b.url}"`);
    const spec = await getWithHost(`${b.url}/openapi.json`, evil);
    expect(JSON.parse(spec.body).servers).toEqual([{ url: b.url }]);
  });

  it('the page token calls the API for that app only, as an API token, and opens no other debug page', async () => {
    const { studioToken, organizationId } = b.server.bootstrap;
    const other = await b.api('POST', `/v1/organizations/${organizationId}/apps`, { token: studioToken, json: { name: 'Other app' } });
    expect(other.status).toBe(201);
    // Opened with the studio token, whose organization holds both apps.
    const pageToken = pageTokenOf((await open(studioToken)).html);
    expect((await b.api('GET', `/v1/apps/${appId}`, { token: pageToken })).status).toBe(200);
    expect((await b.api('GET', `/v1/apps/${appId}/tasks/${actionId}`, { token: pageToken })).status).toBe(200);
    expect((await b.api('GET', `/v1/apps/${other.body.app.id}`, { token: pageToken })).body.error.code).toBe('APP_NOT_FOUND');
    expect((await b.api('GET', `/v1/apps/${appId}/tokens`, { token: pageToken })).body.error.code).toBe('STUDIO_ONLY');
    // No chain of pages: a page token opens no debug page, by header or query.
    const byHeader = await get(`${compile()}?html`, { 'Auth-token': pageToken });
    expect(byHeader.status).toBe(403);
    expect((await byHeader.json()).error.code).toBe('DEBUG_PAGE_REFUSED');
    expect((await get(`${compile()}?html&token=${pageToken}`)).status).toBe(401);
    // A ticket is no API credential.
    const ticket = new URL((await get(`${compile()}?html&token=${studioToken}`)).headers.get('location')!).searchParams.get('ticket')!;
    expect((await b.api('GET', `/v1/apps/${appId}`, { token: ticket })).body.error.code).toBe('INVALID_TOKEN');
  });

  it('refuses client tokens (403 CLIENT_TOKEN_FORBIDDEN), unknown, forged, misdirected and revoked tickets (401 INVALID_TICKET)', async () => {
    const { studioToken } = b.server.bootstrap;
    const client = await b.api('POST', `/v1/apps/${appId}/tokens`, { token: studioToken, json: { kind: 'client', name: 'screen' } });
    expect(client.status).toBe(201);
    const refused = await get(`${compile()}?html&token=${client.body.token.token}`);
    expect(refused.status).toBe(403);
    expect((await refused.json()).error.code).toBe('CLIENT_TOKEN_FORBIDDEN');

    const api = await b.api('POST', `/v1/apps/${appId}/tokens`, { token: studioToken, json: { name: 'to revoke' } });
    const location = (await get(`${compile()}?html&token=${api.body.token.token}`)).headers.get('location')!;
    const ticket = new URL(location).searchParams.get('ticket')!;
    const [body, mac] = ticket.split('.') as [string, string];
    const forged = `${body.slice(0, -2)}${body.endsWith('A') ? 'B' : 'A'}${body.slice(-1)}.${mac}`;
    const claim = JSON.parse(Buffer.from(body.slice('iar_ticket_'.length), 'base64url').toString());
    const reSigned = `iar_ticket_${Buffer.from(JSON.stringify({ ...claim, x: otherActionId })).toString('base64url')}.${mac}`;
    for (const [what, url] of [
      ['unknown', `${compile()}?html&ticket=nope`],
      ['empty', `${compile()}?html&ticket=`],
      ['forged', `${compile()}?html&ticket=${encodeURIComponent(forged)}`],
      ['claim changed', `${compile(otherActionId)}?html&ticket=${encodeURIComponent(reSigned)}`],
      ['other action', `${compile(otherActionId)}?html&ticket=${encodeURIComponent(ticket)}`],
    ] as const) {
      const res = await get(url);
      expect(res.status, what).toBe(401);
      expect((await res.json()).error.code, what).toBe('INVALID_TICKET');
    }
    expect((await get(location)).status).toBe(200);
    expect((await b.api('DELETE', `/v1/apps/${appId}/tokens/${api.body.token.id}`, { token: studioToken })).status).toBe(200);
    expect((await get(location)).status).toBe(401);
  });
});

describe('compile page credentials expire (injected clock)', () => {
  let t: TestBackend;
  let now = Date.parse('2026-03-01T10:00:00Z');
  beforeAll(async () => {
    t = await startTestBackend({ clock: () => now });
  });
  afterAll(() => t?.close());

  it('a ticket opens the page for 60 s; the page token calls the API for 30 minutes', async () => {
    const { appId, apiToken } = t.server.bootstrap;
    const action = await t.api('POST', `/v1/apps/${appId}/tasks`, { json: { name: 'expiring' } });
    const url = `${t.url}/v1/apps/${appId}/tasks/${action.body.action.id}/compile?html&token=${apiToken}`;

    const late = (await get(url)).headers.get('location')!;
    now += 61_000;
    const expired = await get(late);
    expect(expired.status).toBe(401);
    expect((await expired.json()).error.code).toBe('INVALID_TICKET');

    const location = (await get(url)).headers.get('location')!;
    now += 59_000;
    const page = await get(location);
    expect(page.status).toBe(200);
    const pageToken = pageTokenOf(await page.text());
    now += 30 * 60_000 - 1;
    expect((await t.api('GET', `/v1/apps/${appId}`, { token: pageToken })).status).toBe(200);
    now += 1;
    const gone = await t.api('GET', `/v1/apps/${appId}`, { token: pageToken });
    expect(gone.status).toBe(401);
    expect(gone.body.error.code).toBe('INVALID_TOKEN');
  });
});

describe('publicUrl option', () => {
  let p: TestBackend;
  const publicUrl = 'https://runtime.example/base';
  beforeAll(async () => {
    p = await startTestBackend({ publicUrl: `${publicUrl}/` });
  });
  afterAll(() => p?.close());

  it('redirects, the page, its CSP, file links and the OpenAPI servers use it', async () => {
    const { appId, apiToken } = p.server.bootstrap;
    const action = await p.api('POST', `/v1/apps/${appId}/tasks`, { json: { name: 'public' } });
    const path = `/v1/apps/${appId}/tasks/${action.body.action.id}/compile`;
    const location = (await get(`${p.url}${path}?html&token=${apiToken}`)).headers.get('location')!;
    expect(location).toMatch(new RegExp(`^${publicUrl}${path}\\?html&ticket=`));
    const page = await get(`${p.url}${path}${new URL(location).search}`);
    const html = await page.text();
    expect(html).toContain(`src="${publicUrl}/dist/client.js" data-base-url="${publicUrl}"`);
    expect(html).not.toContain(p.url);
    expect(parseCsp(page.headers.get('content-security-policy'))['connect-src']).toEqual([`${publicUrl}/`]);

    const ds = await p.client.DataSources.create({ name: 'Public files' });
    const form = new FormData();
    form.append('doc', new Blob(['hello'], { type: 'text/plain' }), 'a.txt');
    const entry = await (await p.client.DataSources.connect(ds.id)).insert(form);
    expect(entry.data.doc).toBe(`${publicUrl}/v1/data-sources/${ds.id}/files/${entry.data.docMediaFileId}`);
    expect((await p.api('GET', '/openapi.json', { token: null })).body.servers).toEqual([{ url: publicUrl }]);
  });

  it('refuses a publicUrl that is not an http(s) URL', async () => {
    for (const bad of ['runtime.example', 'javascript:alert(1)', 'https://runtime.example/?q=1', 'https://user:pw@runtime.example'])
      await expect(startServer({ memory: true, log: false, publicUrl: bad }), bad).rejects.toThrow(/publicUrl/);
  });
});
