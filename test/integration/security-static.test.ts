import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestBackend, type TestBackend } from '../helpers/server.js';

/**
 * Static mounts and file downloads: no path leaves its folder whatever the encoding, malformed escapes are a
 * 4xx, and uploaded names and types never inject response headers.
 */

let b: TestBackend;
beforeAll(async () => {
  // `/dist/` serves src/ here (always present in the checkout) so the test does not depend on a build.
  b = await startTestBackend({ static: { mounts: { '/dist/': 'src/server', '/': 'docs' } } });
});
afterAll(() => b?.close());

/** A GET with the path sent exactly as written (fetch would normalise `..`). */
function rawGet(path: string): Promise<{ status: number; body: string; headers: Record<string, unknown> }> {
  const url = new URL(b.url);
  return new Promise((done, fail) => {
    const req = request({ host: url.hostname, port: url.port, path, method: 'GET' }, (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => done({ status: res.statusCode!, body, headers: res.headers }));
    });
    req.on('error', fail);
    req.end();
  });
}

describe('static mounts', () => {
  it('serves files inside the mount', async () => {
    const ok = await rawGet('/dist/app.ts');
    expect(ok.status).toBe(200);
    expect(ok.body).toContain('createApp');
    expect((await rawGet('/errors.md')).status).toBe(200);
  });

  it('never serves a file outside its folder, whatever the encoding', async () => {
    const attempts = [
      '/dist/../package.json',
      '/dist/../../package.json',
      '/dist/%2e%2e/package.json',
      '/dist/%2e%2e/%2e%2e/package.json',
      '/dist/%2e%2e%2f%2e%2e%2fpackage.json',
      '/dist/..%2f..%2fpackage.json',
      '/dist/%252e%252e/%252e%252e/package.json',
      '/dist/..%5c..%5cpackage.json',
      '/dist/....//....//package.json',
      '/%2e%2e/package.json',
      '/..%2fpackage.json',
      '/dist/%2fetc%2fpasswd',
      '//etc/passwd',
      '/dist/%00../../package.json',
      '/dist/app.ts%00.png',
    ];
    for (const path of attempts) {
      const res = await rawGet(path);
      expect(res.status, path).toBeGreaterThanOrEqual(400);
      expect(res.status, path).toBeLessThan(500);
      expect(res.body, path).not.toContain('"devDependencies"');
      expect(res.body, path).not.toContain('root:');
    }
  });

  it('malformed percent escapes are a 400 with the error shape, not a 500', async () => {
    for (const path of ['/dist/%E0%A4%A', '/dist/%', '/%zz', '/dist/%C0%AE%C0%AE/package.json', '/v1/data-sources/%E0%A4%A', '/v1/apps/1/tasks/%E0%A4%A']) {
      const res = await rawGet(path);
      expect(res.status, path).toBeGreaterThanOrEqual(400);
      expect(res.status, path).toBeLessThan(500);
      expect(JSON.parse(res.body).error.code, path).toEqual(expect.any(String));
    }
  });
});

describe('file downloads', () => {
  it('uploaded names and content types never inject headers; content is served sandboxed', async () => {
    const ds = (await b.api('POST', `/v1/data-sources?appId=${b.server.bootstrap.appId}`, { json: { name: 'Files' } })).body.dataSource.id;
    const boundary = 'XyZ';
    const part = (name: string, filename: string, type: string, content: string) =>
      `--${boundary}\r\nContent-Disposition: form-data; name="${name}"; filename="${filename}"\r\nContent-Type: ${type}\r\n\r\n${content}\r\n`;
    const body =
      part('page', 'x.html"; X-Injected: 1; a=".txt', 'text/html', '<script>alert(document.domain)</script>') +
      part('odd', 'y%0d%0aX-Injected:%201.txt', 'text/plain\u0001\u0002', 'odd') +
      `--${boundary}--\r\n`;
    const up = await fetch(`${b.url}/v1/data-sources/${ds}/data`, {
      method: 'PUT',
      headers: { 'Auth-token': b.server.bootstrap.apiToken, 'Content-Type': `multipart/form-data; boundary=${boundary}` },
      body,
    });
    expect(up.status).toBeLessThan(500);
    if (up.status !== 201) return; // refused is fine too
    const entry = await up.json();
    for (const field of ['pageMediaFileId', 'oddMediaFileId']) {
      const id = entry.data[field];
      if (id === undefined) continue;
      const res = await fetch(`${b.url}/v1/data-sources/${ds}/files/${id}`, { headers: { 'Auth-token': b.server.bootstrap.apiToken } });
      expect(res.status, field).toBe(200);
      expect(res.headers.get('x-injected')).toBeNull();
      expect(res.headers.get('content-security-policy')).toBe('sandbox');
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(res.headers.get('content-disposition')).toMatch(/^inline; filename\*=UTF-8''[^"\r\n;]*$/);
    }
  });
});
