import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestBackend, type TestBackend } from '../helpers/server.js';

/**
 * A media folder deleted while files are uploaded into it and folders created in it (issue 16): each upload or
 * creation either lands before the delete (and is removed with the folder) or finds the folder gone (404);
 * never a 500, and the delete always succeeds.
 */
describe('media folders deleted during uploads', () => {
  let b: TestBackend;
  beforeAll(async () => {
    b = await startTestBackend();
  });
  afterAll(() => b?.close());

  const upload = (folderId: number, size: number) => {
    const form = new FormData();
    form.append('files', new Blob(['x'.repeat(size)], { type: 'text/plain' }), 'race.txt');
    return fetch(`${b.url}/v1/media/files?folderId=${folderId}`, { method: 'POST', headers: { 'Auth-token': b.server.bootstrap.apiToken }, body: form });
  };
  const createIn = (parentId: number, name: string) => b.api('POST', '/v1/media/folders', { json: { name, parentId } });

  it('every racing upload and folder creation answers 201 or 404, and the delete removes everything', async () => {
    for (let round = 0; round < 12; round++) {
      const root = await b.api('POST', '/v1/media/folders', { json: { name: `top ${round}`, appId: b.server.bootstrap.appId } });
      expect(root.status).toBe(201);
      const rootId = root.body.id as number;
      const child = await createIn(rootId, 'child');
      expect(child.status).toBe(201);
      const racers: Promise<number>[] = [];
      for (let i = 0; i < 6; i++) {
        racers.push(upload(i % 2 ? rootId : child.body.id, 50_000 * (i + 1)).then((r) => r.status));
        racers.push(createIn(i % 2 ? rootId : child.body.id, `racer ${i}`).then((r) => r.status));
      }
      // The delete starts among them (after a round-dependent number of microtask turns).
      for (let t = 0; t < round * 3; t++) await Promise.resolve();
      const removed = b.api('DELETE', `/v1/media/folders/${rootId}`);
      const all = [...(await Promise.all(racers)), (await removed).status];
      expect((await removed).status, JSON.stringify((await removed).body)).toBe(200);
      for (const s of all.slice(0, -1)) expect([201, 404]).toContain(s);
      // Nothing of the folder is left: not the folder, not the child, no file or folder that raced in.
      expect((await b.api('GET', `/v1/media?folderId=${rootId}`)).status).toBe(404);
      expect((await b.api('GET', `/v1/media?folderId=${child.body.id}`)).status).toBe(404);
    }
    const listing = await b.api('GET', `/v1/media?appId=${b.server.bootstrap.appId}`);
    expect(listing.body.folders).toEqual([]);
    expect(listing.body.files).toEqual([]);
  }, 120_000);
});
