import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, type Client } from '../../src/index.js';
import type { DataSourceEntry } from '../../src/contract/data-sources.js';
import { startTestBackend, type TestBackend } from '../helpers/server.js';

/**
 * Issue 16 through the client library, as an integration client uses it: a client with only a token (no app
 * configured) lists its organization's data sources, filters them by type on the backend, lists entries
 * (`GET …/data`), and runs a sync from a list that goes stale before its commit.
 */
describe('integration clients through the client library', () => {
  let b: TestBackend;
  let sync: Client;
  let other: Client;
  beforeAll(async () => {
    b = await startTestBackend();
    // An integration client: a token and the backend, nothing else.
    sync = createClient({ baseUrl: b.url, authToken: b.server.bootstrap.apiToken });
    other = b.client;
  });
  afterAll(() => b?.close());

  const byKey = (entries: DataSourceEntry[]) => Object.fromEntries(entries.map((e) => [String(e.data.key), e.data]));

  it("lists the token's organization without an app, and filters by type on the backend", async () => {
    const { appId, organizationId } = b.server.bootstrap;
    const appSource = await other.DataSources.create({ name: 'app source' });
    const keystore = await other.DataSources.create({ name: 'settings', type: 'keystore' });
    const orgSource = await other.DataSources.create({ name: 'org source', organizationId });
    const foreign = await b.server.createOrganization('Foreign');
    const foreignClient = createClient({ baseUrl: b.url, appId: foreign.appId, authToken: foreign.apiToken });
    await foreignClient.DataSources.create({ name: 'foreign source' });

    const listed = await sync.DataSources.get();
    expect(listed.map((d) => d.id).sort((x, y) => x - y)).toEqual([appSource.id, keystore.id, orgSource.id].sort((x, y) => x - y));
    expect((await sync.DataSources.get({ type: 'keystore' })).map((d) => d.id)).toEqual([keystore.id]);
    expect((await sync.DataSources.get({ type: null })).map((d) => d.id).sort((x, y) => x - y)).toEqual([appSource.id, orgSource.id].sort((x, y) => x - y));
    // With an app given (or configured), that app's.
    expect((await sync.DataSources.get({ appId, type: 'keystore' })).map((d) => d.id)).toEqual([keystore.id]);
    expect((await other.DataSources.get()).map((d) => d.id)).not.toContain(orgSource.id);
  });

  it('lists entries with GET …/data, whole or in pages', async () => {
    const ds = await other.DataSources.create({ name: 'paged' });
    await (await other.DataSources.connect(ds.id)).import(Array.from({ length: 7 }, (_, i) => ({ key: `k${i}`, n: i })));
    const conn = await sync.DataSources.connect(ds.id);
    const all = await conn.list();
    expect(all.map((e) => e.data.n)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect((await conn.list({ limit: 3, offset: 2 })).map((e) => e.data.n)).toEqual([2, 3, 4]);
    expect(await conn.list({ offset: 10 })).toEqual([]);
    await expect(conn.list({ limit: -1 })).rejects.toMatchObject({ status: 400 });
  });

  it('a sync run from a list that went stale stores exactly what was intended, once', async () => {
    const ds = await other.DataSources.create({ name: 'sync target' });
    await (await other.DataSources.connect(ds.id)).import(['a', 'b', 'c', 'd', 'e'].map((key) => ({ key, v: 0 })));
    const conn = await sync.DataSources.connect(ds.id);

    // 1. The sync client lists the remote entries.
    const remote = Object.fromEntries((await conn.list()).map((e) => [String(e.data.key), e.id]));
    // 2. Meanwhile another writer deletes a and e, and changes b.
    const writer = await other.DataSources.connect(ds.id);
    await writer.removeById(remote.a!);
    await writer.removeById(remote.e!);
    await writer.update(remote.b!, { other: true });
    // 3. The client commits from its stale list; the answer is lost, so it sends the same commit again.
    const body = {
      append: true,
      entries: [
        { id: remote.a, data: { key: 'a', v: 1 }, clientId: 'row-a' },
        { id: remote.b, data: { key: 'b', v: 1 } },
        { data: { key: 'f', v: 1 }, clientId: 'row-f' },
        { id: remote.c, data: { key: 'c', v: 1 } },
      ],
      delete: [remote.d!, remote.e!],
    };
    const first = await conn.commit(body, { idempotencyKey: 'sync-run-1' });
    const again = await conn.commit(body, { idempotencyKey: 'sync-run-1' });
    expect(first.errors).toEqual([expect.objectContaining({ index: 0, id: remote.a, clientId: 'row-a', code: 'ENTRY_NOT_FOUND' })]);
    expect(again.clientIds).toEqual(first.clientIds);

    // 4. Stored: exactly the intent given what changed meanwhile, with f inserted once.
    const intended = { b: { key: 'b', v: 1 }, c: { key: 'c', v: 1 }, f: { key: 'f', v: 1 } };
    const stored = await conn.list();
    expect(stored).toHaveLength(3);
    expect(byKey(stored)).toEqual(intended);
    expect(stored.find((e) => e.data.key === 'f')!.id).toBe(first.clientIds![0]!.id);
    expect(byKey(await writer.find())).toEqual(intended);
  });
});
