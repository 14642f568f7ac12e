import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Bootstrap } from '../../src/server/index.js';
import { startTestBackend, type TestBackend } from '../helpers/server.js';

/**
 * What integration clients list (issue 16, items 3 and 4): data sources of the token's organization without a
 * context, `?type=`, the context in a create's body, and `GET …/data` (every entry, as a select sees them).
 */
describe('listing data sources and entries as integration clients do', () => {
  let b: TestBackend;
  let x: Bootstrap;
  let foreign: Bootstrap;
  beforeAll(async () => {
    b = await startTestBackend();
    x = b.server.bootstrap;
    foreign = await b.server.createOrganization('Foreign');
  });
  afterAll(() => b?.close());

  const create = async (query: string, json: Record<string, unknown>, token = x.apiToken) => {
    const res = await b.api('POST', `/v1/data-sources${query}`, { token, json });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body.dataSource as { id: number; name: string; type: string | null; appId: number | null; organizationId: number };
  };

  it("lists the data sources of the token's organization without a context, and filters by type", async () => {
    const keystore = await create('', { name: 'Keystore', type: 'keystore', organizationId: x.organizationId });
    expect(keystore).toMatchObject({ type: 'keystore', organizationId: x.organizationId, appId: null });
    const appData = await create(`?appId=${x.appId}`, { name: 'App data' });
    await create('', { name: 'Foreign keystore', type: 'keystore', organizationId: foreign.organizationId }, foreign.apiToken);

    const all = await b.api('GET', '/v1/data-sources');
    expect(all.status).toBe(200);
    expect(all.body.dataSources.map((d: { id: number }) => d.id)).toEqual([keystore.id, appData.id]);
    const keystores = await b.api('GET', '/v1/data-sources?type=keystore');
    expect(keystores.body.dataSources.map((d: { name: string }) => d.name)).toEqual(['Keystore']);
    expect((await b.api('GET', `/v1/data-sources?appId=${x.appId}&type=keystore`)).body.dataSources).toEqual([]);
    expect((await b.api('GET', '/v1/data-sources?type=nothing-of-this-type')).body.dataSources).toEqual([]);
    const theirs = await b.api('GET', '/v1/data-sources?type=keystore', { token: foreign.apiToken });
    expect(theirs.body.dataSources.map((d: { name: string }) => d.name)).toEqual(['Foreign keystore']);
  });

  it('takes the context of a create from the body (appId too), and refuses a body that contradicts the query', async () => {
    const inApp = await create('', { name: 'Body app', appId: x.appId });
    expect(inApp.appId).toBe(x.appId);
    const clash = await b.api('POST', `/v1/data-sources?appId=${x.appId}`, { json: { name: 'Clash', appId: x.appId + 1000 } });
    expect(clash.status).toBe(400);
    expect(clash.body.error.code).toBe('INVALID_PARAMETER');
    const none = await b.api('POST', '/v1/data-sources', { json: { name: 'Nowhere' } });
    expect(none.status).toBe(400);
    const bad = await b.api('POST', '/v1/data-sources', { json: { name: 'Bad', organizationId: { id: 1 } } });
    expect(bad.status).toBe(400);
    // Another tenant's organization in the body: refused, nothing created there.
    const intrude = await b.api('POST', '/v1/data-sources', { token: foreign.apiToken, json: { name: 'Intruder', organizationId: x.organizationId } });
    expect(intrude.status).toBe(404); // as a missing organization (issue 15, no probing)
    expect((await b.api('GET', '/v1/data-sources')).body.dataSources.map((d: { name: string }) => d.name)).not.toContain('Intruder');
  });

  it('needs a token to list without a context (401)', async () => {
    const res = await b.api('GET', '/v1/data-sources', { token: null });
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('MISSING_TOKEN');
  });

  it('GET …/data answers every entry, pages with limit/offset, and applies the access rules of a select', async () => {
    const ds = await create(`?appId=${x.appId}`, { name: 'Listed' });
    await b.api('POST', `/v1/data-sources/${ds.id}/data`, {
      json: {
        entries: [
          { n: 1, secret: 'a' },
          { n: 2, secret: 'b' },
          { n: 3, secret: 'c' },
        ],
      },
    });
    const all = await b.api('GET', `/v1/data-sources/${ds.id}/data`);
    expect(all.status).toBe(200);
    expect(Object.keys(all.body)).toEqual(['entries']);
    expect(all.body.entries.map((e: { data: { n: number } }) => e.data.n)).toEqual([1, 2, 3]);
    expect(all.body.entries[0]).toMatchObject({ id: expect.any(Number), dataSourceId: ds.id, createdAt: expect.any(String) });
    const page = await b.api('GET', `/v1/data-sources/${ds.id}/data?limit=1&offset=1`);
    expect(page.body.entries.map((e: { data: { n: number } }) => e.data.n)).toEqual([2]);
    const byName = await b.api('GET', `/v1/data-sources/Listed/data`);
    expect(byName.body.entries).toHaveLength(3);
    for (const q of ['limit=-1', 'limit=abc', 'offset=1.5']) {
      const bad = await b.api('GET', `/v1/data-sources/${ds.id}/data?${q}`);
      expect(bad.status, q).toBe(400);
      expect(bad.body.error.code).toBe('INVALID_PARAMETER');
    }

    // A rule that hides a column hides it here too; without a read rule the answer is 403.
    await b.api('PUT', `/v1/data-sources/${ds.id}`, {
      token: x.studioToken,
      json: { accessRules: [{ type: ['select'], allow: 'loggedIn', exclude: ['secret'] }] },
    });
    const hidden = await b.api('GET', `/v1/data-sources/${ds.id}/data`, { token: x.clientToken });
    expect(hidden.status).toBe(200);
    expect(hidden.body.entries.map((e: { data: Record<string, unknown> }) => e.data)).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
    await b.api('PUT', `/v1/data-sources/${ds.id}`, { token: x.studioToken, json: { accessRules: [{ type: ['insert'], allow: 'loggedIn' }] } });
    const refused = await b.api('GET', `/v1/data-sources/${ds.id}/data`);
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('datasource.access');

    expect((await b.api('GET', `/v1/data-sources/${ds.id}/data`, { token: null })).status).toBe(401);
    const other = await b.api('GET', `/v1/data-sources/${ds.id}/data`, { token: foreign.apiToken });
    expect([403, 404]).toContain(other.status);
    expect(JSON.stringify(other.body)).not.toContain('secret');
    // By name, another tenant's data source does not exist.
    const otherByName = await b.api('GET', `/v1/data-sources/Listed/data`, { token: foreign.apiToken });
    expect(otherByName.status).toBe(404);
  });
});
