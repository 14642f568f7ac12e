import { request } from 'node:http';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runtimeFiles } from '../helpers/runtime.js';
import { startTestBackend, type TestBackend } from '../helpers/server.js';

/** A GET with exactly these headers (Node's fetch would add and undo its own Accept-Encoding). */
function get(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/**
 * The backend serves its own page runtime at /dist/ (issue 13): without any `static` option, to any origin,
 * precompressed and negotiated, hashed files immutable, client.js with a short cache and ETag/304.
 */
describe('runtime assets served by startServer()', () => {
  let b: TestBackend;
  const files = runtimeFiles();
  beforeAll(async () => {
    // A static mount of another folder at /dist/ must not shadow the runtime.
    const decoy = mkdtempSync(join(tmpdir(), 'iar-decoy-'));
    writeFileSync(join(decoy, 'client.js'), 'window.decoy = true;');
    writeFileSync(join(decoy, 'other.txt'), 'other');
    b = await startTestBackend({ static: { mounts: { '/dist/': decoy } } });
  });
  afterAll(() => b?.close());

  it('client.js: from any origin, short cache with an ETag, 304 on revalidation', async () => {
    const plain = await get(`${b.url}/dist/client.js`);
    expect(plain.status).toBe(200);
    expect(plain.body.equals(readFileSync('dist/client.js'))).toBe(true);
    expect(plain.headers['access-control-allow-origin']).toBe('*');
    expect(plain.headers['cross-origin-resource-policy']).toBe('cross-origin');
    expect(plain.headers['content-type']).toMatch(/^text\/javascript/);
    expect(plain.headers['cache-control']).toBe('public, max-age=60');
    expect(plain.headers['content-encoding']).toBeUndefined();
    const etag = String(plain.headers.etag);
    expect(etag).toMatch(/^"[A-Za-z0-9_-]+"$/);

    const again = await get(`${b.url}/dist/client.js`, { 'If-None-Match': etag });
    expect(again.status).toBe(304);
    expect(again.body.length).toBe(0);
    // The brotli copy is another representation with its own ETag: each revalidates only its own.
    const br = await get(`${b.url}/dist/client.js`, { 'Accept-Encoding': 'gzip, deflate, br, zstd' });
    expect(br.headers.etag).not.toBe(etag);
    expect((await get(`${b.url}/dist/client.js`, { 'Accept-Encoding': 'br', 'If-None-Match': String(br.headers.etag) })).status).toBe(304);
    expect((await get(`${b.url}/dist/client.js`, { 'Accept-Encoding': 'br', 'If-None-Match': `W/${br.headers.etag}` })).status).toBe(304);
    expect((await get(`${b.url}/dist/client.js`, { 'Accept-Encoding': 'gzip', 'If-None-Match': String(br.headers.etag) })).status).toBe(200);
    expect((await get(`${b.url}/dist/client.js`, { 'If-None-Match': '"something-else"' })).status).toBe(200);
  });

  it('negotiates the precompressed copies: brotli first, then gzip, else identity', async () => {
    const original = readFileSync(`dist/${files.engine}`);
    const br = await get(`${b.url}/dist/${files.engine}`, { 'Accept-Encoding': 'gzip, deflate, br, zstd' });
    expect(br.headers['content-encoding']).toBe('br');
    expect(br.headers.vary).toBe('Accept-Encoding');
    expect(brotliDecompressSync(br.body).equals(original)).toBe(true);
    expect(br.body.length).toBeLessThan(original.length / 2);

    const gz = await get(`${b.url}/dist/${files.engine}`, { 'Accept-Encoding': 'gzip' });
    expect(gz.headers['content-encoding']).toBe('gzip');
    expect(gunzipSync(gz.body).equals(original)).toBe(true);

    // q-values: the client's preference wins over ours.
    const preferGzip = await get(`${b.url}/dist/${files.engine}`, { 'Accept-Encoding': 'br;q=0.1, gzip' });
    expect(preferGzip.headers['content-encoding']).toBe('gzip');
    const refused = await get(`${b.url}/dist/${files.engine}`, { 'Accept-Encoding': 'br;q=0, gzip;q=0' });
    expect(refused.headers['content-encoding']).toBeUndefined();
    expect(refused.body.equals(original)).toBe(true);
  });

  it('the hashed engine chunk and wasm are immutable; the wasm is application/wasm (streaming compile)', async () => {
    for (const name of [files.engine, files.wasm]) {
      const res = await get(`${b.url}/dist/${name}`, { 'Accept-Encoding': 'br' });
      expect(res.status).toBe(200);
      expect(res.headers['cache-control']).toBe('public, max-age=31536000, immutable');
      expect(res.headers['access-control-allow-origin']).toBe('*');
      expect(res.headers['cross-origin-resource-policy']).toBe('cross-origin');
    }
    expect((await get(`${b.url}/dist/${files.wasm}`)).headers['content-type']).toBe('application/wasm');
    expect(files.engine).toMatch(/^engine-[A-Za-z0-9_-]+\.mjs$/);
    expect(files.wasm).toMatch(/^quickjs-[A-Za-z0-9_-]+\.wasm$/);
  });

  it('serves only the runtime: other dist files, traversal and unknown names go on to the static mounts or 404', async () => {
    expect((await get(`${b.url}/dist/server.mjs`)).status).toBe(404);
    expect((await get(`${b.url}/dist/runtime.json`)).status).toBe(404);
    expect((await get(`${b.url}/dist/../package.json`)).status).toBe(404);
    expect((await get(`${b.url}/dist/%2e%2e/package.json`)).status).toBe(404);
    expect((await get(`${b.url}/dist/engine-notthere.mjs`)).status).toBe(404);
    // The decoy mount still serves its own other files, never the runtime's names.
    expect((await get(`${b.url}/dist/other.txt`)).body.toString()).toBe('other');
    expect((await get(`${b.url}/dist/client.js`)).body.toString()).not.toContain('window.decoy');
  });
});

describe('the URLs a backend reports', () => {
  it('listening on every interface, url and publicUrl name loopback (a browser cannot open 0.0.0.0); publicUrl is reported', async () => {
    const wildcard = await startTestBackend({ host: '0.0.0.0' });
    try {
      expect(wildcard.server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(wildcard.server.publicUrl).toBe(wildcard.server.url);
      expect((await get(`${wildcard.server.url}/dist/client.js`)).status).toBe(200);
    } finally {
      await wildcard.close();
    }
    const proxied = await startTestBackend({ publicUrl: 'https://api.example.com/' });
    try {
      expect(proxied.server.publicUrl).toBe('https://api.example.com');
    } finally {
      await proxied.close();
    }
  });
});
