import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestBackend, type TestBackend } from '../helpers/server.js';

let b: TestBackend;
let appId: number;
beforeAll(async () => {
  b = await startTestBackend();
  appId = b.server.bootstrap.appId;
});
afterAll(() => b.close());

describe('debug compile page', () => {
  it('serves HTML defining ENV.taskPipeline, loading client.js and each custom function as a named script', async () => {
    const page = await b.api('POST', `/v1/apps/${appId}/pages`, { json: { name: 'P', script: 'Client.Page.onRemoteExecution(() => "</script><b>x</b>");' } });
    const screenAction = await b.client.App.Actions.create({ name: 'screen-debug', pageId: page.body.page.id });
    const action = await b.client.App.Actions.create({
      name: 'debug-me',
      functions: [{ functionPackage: 'com.client.function.return', settings: { value: '</script>{{ a }}' } }],
    });
    const token = b.server.bootstrap.apiToken;
    const res = await fetch(`${b.url}/v1/apps/${appId}/tasks/${action.id}/compile?html&token=${token}&payload=${encodeURIComponent('{"a":1}')}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/html');
    const html = await res.text();
    expect(html).toMatch(new RegExp(`<script nonce="[^"]+" src="${b.url}/dist/client.js"`));
    expect(html).toContain('Client.App.Actions.Pipeline.run()');
    const env = html.match(/window\.ENV = Object\.assign\(window\.ENV \|\| \{\}, (.*)\);<\/script>/)!;
    const parsed = JSON.parse(env[1]!);
    expect(parsed.taskPipeline).toEqual(action.functions);
    expect(html.match(/<\/script>/g)!.length).toBe(html.match(/<script/g)!.length);

    const screen = await (await fetch(`${b.url}/v1/apps/${appId}/tasks/${screenAction.id}/compile?html&token=${token}`)).text();
    expect(screen).toContain(`//# sourceURL=custom-functions/com.client.function.screen-${page.body.page.id}.js`);
    expect(screen).toContain('Client.Functions.register(');
    expect(screen).not.toContain('"</script><b>');
  });

  it('needs a token (header or ?token=) and valid parameters', async () => {
    const action = await b.client.App.Actions.create({ name: 'debug-auth' });
    expect((await fetch(`${b.url}/v1/apps/${appId}/tasks/${action.id}/compile?html`)).status).toBe(401);
    expect((await fetch(`${b.url}/v1/apps/${appId}/tasks/${action.id}/compile?html&token=nope`)).status).toBe(401);
    const token = b.server.bootstrap.apiToken;
    expect((await fetch(`${b.url}/v1/apps/${appId}/tasks/${action.id}/compile?html&token=${token}&payload=%7Bbad`)).status).toBe(400);
    expect((await fetch(`${b.url}/v1/apps/${appId}/tasks/${action.id}/compile?html&token=${token}&environment=live`)).status).toBe(422);
    expect((await fetch(`${b.url}/v1/apps/${appId}/tasks/99999/compile?html&token=${token}`)).status).toBe(404);
  });

  it('offers "debug in page" (not sandboxed) to studio tokens only: an API token\'s page does not render it and may not ask for it', async () => {
    const action = await b.client.App.Actions.create({
      name: 'debug-in-page-html',
      functions: [{ functionPackage: 'com.client.function.script', settings: { code: 'return 1' } }],
    });
    const page = (token: string, extra = '') => fetch(`${b.url}/v1/apps/${appId}/tasks/${action.id}/compile?html&token=${token}${extra}`);
    const viewConfig = (html: string) => JSON.parse(html.match(/\}\)\((\{"publicUrl".*)\);\n<\/script>/)![1]!);
    const api = await (await page(b.server.bootstrap.apiToken)).text();
    expect(api).not.toContain('id="in-page"');
    expect(api).not.toContain('not sandboxed');
    expect(viewConfig(api).inPage).toBeNull();
    const studio = await (await page(b.server.bootstrap.studioToken)).text();
    expect(studio).toMatch(/<input type="checkbox" id="in-page"> Debug in page <strong class="warning">\(not sandboxed\)<\/strong>/);
    expect(viewConfig(studio).inPage).toMatchObject({ on: false, functions: [] });
    expect(viewConfig(await (await page(b.server.bootstrap.studioToken, '&debugInPage=1')).text()).inPage.on).toBe(true);

    const refused = await page(b.server.bootstrap.apiToken, '&debugInPage=1');
    expect(refused.status).toBe(403);
    expect((await refused.json()).error.code).toBe('STUDIO_ONLY');
    const bad = await page(b.server.bootstrap.studioToken, '&debugInPage=yes');
    expect(bad.status).toBe(400);
    expect((await bad.json()).error.code).toBe('INVALID_PARAMETER');
  });
});
