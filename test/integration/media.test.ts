import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Bootstrap } from '../../src/server/index.js';
import { createClient } from '../../src/index.js';
import { createTestDatabase } from '../helpers/postgres.js';
import { startTestBackend, testEngine, type TestBackend } from '../helpers/server.js';

/** The media library over raw HTTP (issue 16, item 5): folders, multipart upload, download, delete, encryption at rest. */
describe('media library', () => {
  let b: TestBackend;
  let x: Bootstrap;
  let foreign: Bootstrap;
  let dataDir: string;
  let database: Awaited<ReturnType<typeof createTestDatabase>> | undefined;
  const secret = 'quarterly figures: 42';
  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'media-'));
    // A data folder (to look at the stored bytes) on the engine under test.
    database = testEngine === 'postgres' ? await createTestDatabase() : undefined;
    b = await startTestBackend({ dataDir, databaseUrl: database?.url, limits: { fileBytes: 1024 } });
    x = b.server.bootstrap;
    foreign = await b.server.createOrganization('Foreign');
  });
  afterAll(async () => {
    await b?.close();
    await database?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const form = (files: [string, string, string][], fields: Record<string, string> = {}) => {
    const data = new FormData();
    for (const [k, v] of Object.entries(fields)) data.append(k, v);
    for (const [field, name, content] of files) data.append(field, new Blob([content], { type: 'text/plain' }), name);
    return data;
  };
  const upload = async (body: FormData, query = '', token: string | null = x.apiToken) => {
    const res = await fetch(`${b.url}/v1/media/files${query}`, { method: 'POST', headers: token ? { 'Auth-token': token } : {}, body });
    return { status: res.status, body: (await res.json()) as any };
  };
  const download = async (url: string, token: string | null = x.apiToken) => {
    const res = await fetch(url, { headers: token ? { 'Auth-token': token } : {} });
    return { status: res.status, text: await res.text(), headers: res.headers };
  };
  const stored = () => {
    const folder = join(dataDir, 'files', 'media', String(x.organizationId));
    return readdirSync(folder).map((f) => readFileSync(join(folder, f)).toString('latin1'));
  };

  it('creates folders, uploads files into one, lists and downloads them', async () => {
    const folder = await b.api('POST', '/v1/media/folders', { json: { name: 'Reports', organizationId: x.organizationId } });
    expect(folder.status).toBe(201);
    expect(folder.body).toEqual({
      id: expect.any(Number),
      name: 'Reports',
      parentId: null,
      appId: null,
      organizationId: x.organizationId,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
      deletedAt: null,
    });
    const sub = await b.api('POST', '/v1/media/folders', { json: { name: '2030', parentId: folder.body.id } });
    expect(sub.body).toMatchObject({ parentId: folder.body.id, organizationId: x.organizationId });
    // The parent named as `folderId` (query or body) too; two different names for it are refused, not one ignored.
    const viaQuery = await b.api('POST', `/v1/media/folders?folderId=${sub.body.id}`, { json: { name: 'Q3' } });
    expect(viaQuery.body).toMatchObject({ parentId: sub.body.id });
    const clash = await b.api('POST', `/v1/media/folders?folderId=${sub.body.id}`, { json: { name: 'Q4', parentId: folder.body.id } });
    expect(clash.status).toBe(400);
    expect(clash.body).toMatchObject({ error: { code: 'INVALID_FIELD' }, message: expect.stringContaining('parentId') });
    await b.api('DELETE', `/v1/media/folders/${viaQuery.body.id}`);
    // A NUL in a name is refused alike on both databases (PostgreSQL text cannot hold it).
    const nul = await b.api('POST', '/v1/media/folders', { json: { name: 'a\u0000b', parentId: folder.body.id } });
    expect([nul.status, nul.body.error.code]).toEqual([400, 'INVALID_FIELD']);
    const nulFile = await upload(form([['files[0]', 'q\u0000.txt', 'x']]), `?folderId=${folder.body.id}`);
    expect([nulFile.status, nulFile.body.error?.code]).toEqual([400, 'INVALID_FIELD']);

    const res = await upload(
      form(
        [
          ['files[0]', 'q1.txt', secret],
          ['files[1]', 'q2.txt', 'second'],
        ],
        { folderId: String(folder.body.id) },
      ),
    );
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.files).toHaveLength(2);
    const [q1] = res.body.files;
    expect(q1).toEqual({
      id: expect.any(Number),
      name: 'q1.txt',
      contentType: expect.stringContaining('text/plain'),
      size: Buffer.byteLength(secret),
      url: `${b.url}/v1/media/files/${q1.id}/contents`,
      isEncrypted: false,
      mediaFolderId: folder.body.id,
      appId: null,
      organizationId: x.organizationId,
      userId: (await b.api('GET', '/v1/user')).body.user.id,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });

    const got = await download(q1.url);
    expect(got.status).toBe(200);
    expect(got.text).toBe(secret);
    expect(got.headers.get('content-security-policy')).toBe('sandbox');
    expect(stored()).toContain(secret);
    // A page's client token downloads (an entry may link the file); it does not list or upload.
    expect((await download(q1.url, x.clientToken)).text).toBe(secret);
    expect((await b.api('GET', '/v1/media', { token: x.clientToken })).status).toBe(403);
    expect((await upload(form([['f', 'x.txt', 'x']]), '', x.clientToken)).status).toBe(403);

    const root = await b.api('GET', '/v1/media');
    expect(root.status).toBe(200);
    expect(root.body.folders.map((f: { name: string }) => f.name)).toEqual(['Reports']);
    expect(root.body.files).toEqual([]);
    const inside = await b.api('GET', `/v1/media?folderId=${folder.body.id}&organizationId=${x.organizationId}`);
    expect(inside.body.folders.map((f: { name: string }) => f.name)).toEqual(['2030']);
    expect(inside.body.files.map((f: { name: string }) => f.name)).toEqual(['q1.txt', 'q2.txt']);
  });

  it('keeps app media apart: an app root, visible to that app and the studio', async () => {
    const res = await upload(form([['file', 'logo.txt', 'logo']]), `?appId=${x.appId}`);
    expect(res.status).toBe(201);
    expect(res.body.files[0]).toMatchObject({ appId: x.appId, mediaFolderId: null });
    const app = await b.api('GET', `/v1/media?appId=${x.appId}`);
    expect(app.body.files.map((f: { name: string }) => f.name)).toEqual(['logo.txt']);
    expect((await b.api('GET', '/v1/media')).body.files.map((f: { name: string }) => f.name)).not.toContain('logo.txt');
    const studio = await b.api('GET', `/v1/media?appId=${x.appId}`, { token: x.studioToken });
    expect(studio.body.files).toHaveLength(1);
    // Another app's API token of the same organization does not see it.
    const other = (await b.api('POST', `/v1/organizations/${x.organizationId}/apps`, { token: x.studioToken, json: { name: 'Other app' } })).body.app;
    const otherToken = (await b.api('POST', `/v1/apps/${other.id}/tokens`, { token: x.studioToken, json: { name: 'other' } })).body.token.token;
    expect((await download(res.body.files[0].url, otherToken)).status).toBe(404);
    expect((await b.api('GET', `/v1/media?appId=${x.appId}`, { token: otherToken })).status).toBe(404);
  });

  it('encrypts files at rest when the organization asks for it, and serves them decrypted', async () => {
    await b.api('PUT', `/v1/organizations/${x.organizationId}`, { token: x.studioToken, json: { encryption: true } });
    const text = 'top secret media bytes';
    const res = await upload(form([['file', 'secret.txt', text]]));
    expect(res.body.files[0].isEncrypted).toBe(true);
    expect(stored().some((bytes) => bytes.includes('top secret'))).toBe(false);
    expect((await download(res.body.files[0].url)).text).toBe(text);
    await b.api('PUT', `/v1/organizations/${x.organizationId}`, { token: x.studioToken, json: { encryption: false } });
  });

  it('an entry field may hold a media file URL with <field>MediaFileId; a page reading the entry can download it', async () => {
    const file = (await upload(form([['file', 'photo.txt', 'pixels']]))).body.files[0];
    const ds = (await b.api('POST', `/v1/data-sources?appId=${x.appId}`, { json: { name: 'With media' } })).body.dataSource;
    const entry = await b.api('PUT', `/v1/data-sources/${ds.id}/data`, { json: { title: 'Photo', photo: file.url, photoMediaFileId: file.id } });
    expect(entry.status).toBe(201);
    const read = await b.api('GET', `/v1/data-sources/${ds.id}/data/${entry.body.id}`, { token: x.clientToken });
    expect(read.body.data).toEqual({ title: 'Photo', photo: file.url, photoMediaFileId: file.id });
    expect((await download(read.body.data.photo, x.clientToken)).text).toBe('pixels');
  });

  it('deletes files and folders (with what they hold); bytes are removed', async () => {
    const folder = (await b.api('POST', '/v1/media/folders', { json: { name: 'Trash' } })).body;
    const child = (await b.api('POST', '/v1/media/folders', { json: { name: 'Inner', parentId: folder.id } })).body;
    const [a] = (await upload(form([['file', 'a.txt', 'AAA-unique']]), `?folderId=${folder.id}`)).body.files;
    const [c] = (await upload(form([['file', 'c.txt', 'CCC-unique']]), `?folderId=${child.id}`)).body.files;
    const [d] = (await upload(form([['file', 'd.txt', 'DDD-unique']]))).body.files;

    expect((await b.api('DELETE', `/v1/media/files/${d.id}`)).status).toBe(200);
    expect((await download(d.url)).status).toBe(404);
    expect((await b.api('DELETE', `/v1/media/files/${d.id}`)).status).toBe(404);
    expect(stored()).not.toContain('DDD-unique');

    expect((await b.api('DELETE', `/v1/media/folders/${folder.id}`)).status).toBe(200);
    for (const f of [a, c]) expect((await download(f.url)).status).toBe(404);
    expect(stored().filter((s) => s.includes('-unique'))).toEqual([]);
    expect((await b.api('GET', `/v1/media?folderId=${child.id}`)).status).toBe(404);
    expect((await b.api('GET', '/v1/media')).body.folders.map((f: { name: string }) => f.name)).not.toContain('Trash');
  });

  it('refuses bad input with 4xx { error, message }, never 500', async () => {
    const cases: [string, Promise<{ status: number; body: any }>, number, string][] = [
      ['no file part', upload(form([], { note: 'x' })), 400, 'INVALID_BODY'],
      ['JSON instead of multipart', b.api('POST', '/v1/media/files', { json: { files: [] } }), 400, 'INVALID_BODY'],
      [
        'broken multipart',
        b.api('POST', '/v1/media/files', { body: '--x\r\nbroken', headers: { 'Content-Type': 'multipart/form-data; boundary=x' } }),
        400,
        'INVALID_BODY',
      ],
      ['too large', upload(form([['file', 'big.txt', 'x'.repeat(2000)]])), 413, 'FILE_TOO_LARGE'],
      ['refused extension', upload(form([['file', 'run.exe', 'MZ']])), 422, 'FILE_TYPE_REFUSED'],
      ['unknown folder', upload(form([['file', 'a.txt', 'a']]), '?folderId=999999'), 404, 'MEDIA_FOLDER_NOT_FOUND'],
      ['bad folder id', upload(form([['file', 'a.txt', 'a']]), '?folderId=abc'), 400, 'INVALID_PARAMETER'],
      ['folder id disagrees', upload(form([['file', 'a.txt', 'a']], { folderId: '2' }), '?folderId=1'), 400, 'INVALID_PARAMETER'],
      ['folder without name', b.api('POST', '/v1/media/folders', { json: { name: '  ' } }), 400, 'INVALID_FIELD'],
      ['folder unknown field', b.api('POST', '/v1/media/folders', { json: { name: 'a', color: 'red' } }), 400, 'INVALID_FIELD'],
      ['folder in unknown parent', b.api('POST', '/v1/media/folders', { json: { name: 'a', parentId: 999999 } }), 404, 'MEDIA_FOLDER_NOT_FOUND'],
      ['folder body not JSON', b.api('POST', '/v1/media/folders', { body: '{', headers: { 'Content-Type': 'application/json' } }), 400, 'INVALID_JSON'],
      ['unknown file', b.api('GET', '/v1/media/files/999999/contents'), 404, 'MEDIA_FILE_NOT_FOUND'],
      ['bad file id', b.api('DELETE', '/v1/media/files/x1'), 400, 'INVALID_PARAMETER'],
    ];
    for (const [what, promise, status, code] of cases) {
      const res = await promise;
      expect(res.status, `${what}: ${JSON.stringify(res.body)}`).toBe(status);
      expect(res.body, what).toMatchObject({ error: { code, message: expect.any(String) }, message: expect.any(String) });
    }
  });

  it('works through the client library: Client.Media folders, upload, list, download, remove', async () => {
    const folder = await b.client.Media.Folders.create({ name: 'From the client', appId: x.appId });
    expect(folder).toMatchObject({ name: 'From the client', appId: x.appId, parentId: null });
    const files = await b.client.Media.upload([new File(['one'], 'one.txt', { type: 'text/plain' }), new Blob(['two'], { type: 'text/plain' })], {
      folderId: folder.id,
    });
    expect(files.map((f) => [f.name, f.size, f.mediaFolderId])).toEqual([
      ['one.txt', 3, folder.id],
      ['file', 3, folder.id],
    ]);
    const form = new FormData();
    form.append('files[0]', new Blob(['three'], { type: 'text/plain' }), 'three.txt');
    const [three] = await b.client.Media.upload(form, { folderId: folder.id });
    const listed = await b.client.Media.list({ folderId: folder.id });
    expect(listed.files.map((f) => f.name)).toEqual(['file', 'one.txt', 'three.txt']);
    expect((await b.client.Media.list({ appId: x.appId })).folders.map((f) => f.name)).toContain('From the client');
    expect((await download(three!.url)).text).toBe('three');
    // The bytes through the client, as a Blob (binary intact), also with a page's client token.
    const blob = await b.client.Media.download(three!.id);
    expect(blob).toBeInstanceOf(Blob);
    expect([blob.type, await blob.text()]).toEqual(['text/plain', 'three']);
    const [binary] = await b.client.Media.upload(new Blob([new Uint8Array([0, 255, 1, 128])], { type: 'application/octet-stream' }), { folderId: folder.id });
    const page = createClient({ baseUrl: b.url, appId: x.appId, authToken: x.clientToken });
    expect([...new Uint8Array(await (await page.Media.download(binary!.id)).arrayBuffer())]).toEqual([0, 255, 1, 128]);
    await b.client.Media.remove(binary!.id);
    await b.client.Media.remove(three!.id);
    await expect(b.client.Media.download(three!.id)).rejects.toMatchObject({ status: 404, code: 'MEDIA_FILE_NOT_FOUND' });
    expect((await b.client.Media.list({ folderId: folder.id })).files).toHaveLength(2);
    await expect(b.client.Media.remove(three!.id)).rejects.toMatchObject({ status: 404, code: 'MEDIA_FILE_NOT_FOUND' });
    await b.client.Media.Folders.remove(folder.id);
    await expect(b.client.Media.list({ folderId: folder.id })).rejects.toMatchObject({ status: 404, code: 'MEDIA_FOLDER_NOT_FOUND' });
  });

  it('another organization sees none of it (401 without a token, 403/404 across tenants, no names leaked)', async () => {
    const folder = (await b.api('POST', '/v1/media/folders', { json: { name: 'Private plans' } })).body;
    const [file] = (await upload(form([['file', 'plans.txt', 'private plans']]), `?folderId=${folder.id}`)).body.files;
    for (const token of [null]) {
      expect((await b.api('GET', '/v1/media', { token })).status).toBe(401);
      expect((await download(file.url, token)).status).toBe(401);
      expect((await upload(form([['file', 'a.txt', 'a']]), '', token)).status).toBe(401);
    }
    const theirs = { token: foreign.apiToken };
    const attempts = [
      await b.api('GET', `/v1/media?folderId=${folder.id}`, theirs),
      await b.api('GET', `/v1/media?organizationId=${x.organizationId}`, theirs),
      await b.api('GET', `/v1/media?appId=${x.appId}`, theirs),
      await b.api('GET', `/v1/media/files/${file.id}/contents`, theirs),
      await b.api('DELETE', `/v1/media/files/${file.id}`, theirs),
      await b.api('DELETE', `/v1/media/folders/${folder.id}`, theirs),
      await b.api('POST', '/v1/media/folders', { ...theirs, json: { name: 'Intruder', parentId: folder.id } }),
      await upload(form([['file', 'in.txt', 'in']]), `?folderId=${folder.id}`, foreign.apiToken),
      await b.api('GET', `/v1/media/files/${file.id}/contents`, { token: foreign.studioToken }),
    ];
    for (const res of attempts) {
      expect([403, 404]).toContain(res.status);
      expect(JSON.stringify(res.body)).not.toMatch(/Private plans|plans\.txt|private plans/);
    }
    // Their own root lists only their own media.
    const own = await b.api('GET', '/v1/media', theirs);
    expect(own.body).toEqual({ folders: [], files: [] });
    expect((await download(file.url)).text).toBe('private plans');
  });
});
