import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isApiError } from '../../src/index.js';
import { startTestBackend, type TestBackend } from '../helpers/server.js';

describe('data sources: multipart inserts and files', () => {
  let b: TestBackend;
  let dataDir: string;
  const secret = 'TOP SECRET CONTENT 0123456789';
  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'ds-files-'));
    b = await startTestBackend({ dataDir, limits: { fileBytes: 1024 } });
  });
  afterAll(async () => {
    await b.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const form = (fields: Record<string, string>, files: [string, string, string][]) => {
    const data = new FormData();
    for (const [k, v] of Object.entries(fields)) data.append(k, v);
    for (const [field, name, content] of files) data.append(field, new Blob([content], { type: 'text/plain' }), name);
    return data;
  };
  const storedFiles = (dsId: number) => readdirSync(join(dataDir, 'files', String(dsId))).map((f) => readFileSync(join(dataDir, 'files', String(dsId), f)));

  async function download(url: string, token: string | null = b.server.bootstrap.apiToken) {
    const res = await fetch(url, { headers: token ? { 'Auth-token': token } : {} });
    return { status: res.status, text: await res.text(), headers: res.headers };
  }

  it('stores plain parts as fields and files as URLs with <field>MediaFileId (unencrypted)', async () => {
    const ds = await b.client.DataSources.create({ name: 'Uploads' });
    const conn = await b.client.DataSources.connect(ds.id);
    const entry = await conn.insert(form({ title: 'Report', year: '2024' }, [['doc', 'report.txt', secret]]));
    expect(entry.deletedAt).toBeNull();
    expect(entry.data).toMatchObject({ title: 'Report', year: '2024' });
    expect(entry.data.doc).toBe(`${b.url}/v1/data-sources/${ds.id}/files/${entry.data.docMediaFileId}`);
    expect(typeof entry.data.docMediaFileId).toBe('number');
    const file = await download(entry.data.doc as string);
    expect(file.status).toBe(200);
    expect(file.text).toBe(secret);
    expect(file.headers.get('content-type')).toContain('text/plain');
    expect(file.headers.get('content-security-policy')).toBe('sandbox');
    expect(storedFiles(ds.id).map((f) => f.toString())).toEqual([secret]);
    // files are served with auth
    expect((await download(entry.data.doc as string, null)).status).toBe(401);
    expect((await download(`${b.url}/v1/data-sources/${ds.id}/files/99999`)).status).toBe(404);
  });

  it('encrypts files at rest (AES-GCM) when the organization enables encryption, and serves them decrypted', async () => {
    const { organizationId, studioToken } = b.server.bootstrap;
    expect((await b.api('PUT', `/v1/organizations/${organizationId}`, { json: { encryption: true } })).status).toBe(403);
    expect((await b.api('PUT', `/v1/organizations/${organizationId}`, { token: studioToken, json: { encryption: 'yes' } })).status).toBe(400);
    const on = await b.api('PUT', `/v1/organizations/${organizationId}`, { token: studioToken, json: { encryption: true } });
    expect(on.body.organization).toMatchObject({ id: organizationId, encryption: true });
    const ds = await b.client.DataSources.create({ name: 'Encrypted' });
    const conn = await b.client.DataSources.connect(ds.id);
    const entry = await conn.insert(
      form({}, [
        ['a', 'a.txt', secret],
        ['a', 'b.txt', 'second'],
      ]),
    );
    expect(Array.isArray(entry.data.a)).toBe(true);
    expect((entry.data.aMediaFileId as number[]).length).toBe(2);
    const onDisk = storedFiles(ds.id);
    expect(onDisk).toHaveLength(2);
    for (const bytes of onDisk) {
      expect(bytes.includes(Buffer.from(secret))).toBe(false);
      expect(bytes.includes(Buffer.from('second'))).toBe(false);
    }
    const [first, second] = entry.data.a as string[];
    expect((await download(first!)).text).toBe(secret);
    expect((await download(second!)).text).toBe('second');
    await b.api('PUT', `/v1/organizations/${organizationId}`, { token: studioToken, json: { encryption: false } });
    // files stored before keep being served
    expect((await download(first!)).text).toBe(secret);
  });

  it('refuses executables, scripts and archives (422) and files over the limit (413), storing nothing', async () => {
    const ds = await b.client.DataSources.create({ name: 'Guarded' });
    const conn = await b.client.DataSources.connect(ds.id);
    for (const name of ['run.exe', 'x.js', 'setup.sh', 'photo.jpg.bat', 'a.zip', 'b.tar.gz']) {
      const error = await conn.insert(form({ t: '1' }, [['f', name, 'x']])).catch((e) => e);
      expect(isApiError(error) && error.status, name).toBe(422);
      expect(error.code).toBe('FILE_TYPE_REFUSED');
    }
    const big = await conn.insert(form({}, [['f', 'big.txt', 'x'.repeat(2048)]])).catch((e) => e);
    expect(isApiError(big) && big.status).toBe(413);
    expect(await conn.find()).toEqual([]);
    const folder = join(dataDir, 'files', String(ds.id));
    expect(existsSync(folder) ? readdirSync(folder) : []).toEqual([]);
  });

  it('removes the files with their data source', async () => {
    const ds = await b.client.DataSources.create({ name: 'Cleanup' });
    const conn = await b.client.DataSources.connect(ds.id);
    const entry = await conn.insert(form({}, [['f', 'a.txt', 'bye']]));
    await b.client.DataSources.delete(ds.id);
    expect(() => readdirSync(join(dataDir, 'files', String(ds.id)))).toThrow();
    expect((await download(entry.data.f as string)).status).toBe(404);
  });
});

describe('data sources: files of an in-memory server', () => {
  it('live in a temporary folder removed on close', async () => {
    const b = await startTestBackend();
    const ds = await b.client.DataSources.create({ name: 'Temp' });
    const conn = await b.client.DataSources.connect(ds.id);
    const data = new FormData();
    data.append('f', new Blob(['hello']), 'hello.txt');
    const entry = await conn.insert(data);
    const res = await fetch(entry.data.f as string, { headers: { 'Auth-token': b.server.bootstrap.apiToken } });
    expect(await res.text()).toBe('hello');
    const before = readdirSync(tmpdir()).filter((n) => n.startsWith('in-app-runtime-files-'));
    await b.close();
    const after = readdirSync(tmpdir()).filter((n) => n.startsWith('in-app-runtime-files-'));
    expect(after.length).toBe(before.length - 1);
  });
});
