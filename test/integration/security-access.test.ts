import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Bootstrap } from '../../src/server/index.js';
import { startTestBackend, type TestBackend } from '../helpers/server.js';

/** Studio-only routes, public data sources, and data source management under access rules. */

let b: TestBackend;
let x: Bootstrap;
let second: { id: number; token: string }; // a second API token of the bootstrap app
let otherApp: { appId: number; token: string }; // an API token of another app of the organization

beforeAll(async () => {
  b = await startTestBackend();
  x = b.server.bootstrap;
  second = (await b.api('POST', `/v1/apps/${x.appId}/tokens`, { token: x.studioToken, json: { name: 'second' } })).body.token;
  const app2 = (await b.api('POST', `/v1/organizations/${x.organizationId}/apps`, { token: x.studioToken, json: { name: 'A2' } })).body.app;
  otherApp = { appId: app2.id, token: (await b.api('POST', `/v1/apps/${app2.id}/tokens`, { token: x.studioToken, json: {} })).body.token.token };
});
afterAll(() => b?.close());

async function dataSource(body: Record<string, unknown>, scope = `appId=${x.appId}`): Promise<number> {
  const res = await b.api('POST', `/v1/data-sources?${scope}`, { token: x.studioToken, json: body });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.dataSource.id;
}

describe('studio-only routes refuse API tokens', () => {
  it('every studio-only operation answers 403 STUDIO_ONLY to the app’s own API token and changes nothing', async () => {
    const ds = await dataSource({ name: 'StudioOnly' });
    const n = (await b.api('PUT', `/v1/apps/${x.appId}/notifications`, { json: { data: {} } })).body.notification.id;
    const tokensBefore = (await b.api('GET', `/v1/apps/${x.appId}/tokens`, { token: x.studioToken })).body;
    const attempts: [string, string, unknown?][] = [
      ['PUT', `/v1/apps/${x.appId}`, { name: 'renamed' }],
      ['GET', `/v1/apps/${x.appId}/tokens`],
      ['POST', `/v1/apps/${x.appId}/tokens`, { name: 'mine' }],
      ['DELETE', `/v1/apps/${x.appId}/tokens/${second.id}`],
      ['GET', `/v1/organizations/${x.organizationId}`],
      ['PUT', `/v1/organizations/${x.organizationId}`, { encryption: true }],
      ['POST', `/v1/organizations/${x.organizationId}/apps`, { name: 'planted' }],
      ['GET', `/v1/data-sources/${ds}/logs`],
      ['PUT', `/v1/data-sources/${ds}`, { public: true }],
      ['PUT', `/v1/data-sources/${ds}`, { accessRules: [{ type: ['select'], allow: 'all' }] }],
      ['POST', `/v1/data-sources?appId=${x.appId}`, { name: 'OpenByApi', public: true }],
      ['POST', `/v1/apps/${x.appId}/tasks/functions`, { package: 'com.evil.function.x', code: '() => 1' }],
      ['GET', `/v1/apps/${x.appId}/notifications/${n}/deliveries`],
      ['GET', `/v1/apps/${x.appId}/subscriptions`],
    ];
    for (const [method, path, json] of attempts) {
      const res = await b.api(method, path, { token: x.apiToken, json });
      expect(res.status, `${method} ${path}`).toBe(403);
      expect(res.body.error.code, `${method} ${path}`).toBe('STUDIO_ONLY');
    }
    expect((await b.api('GET', `/v1/apps/${x.appId}`)).body.app.name).toBe('Demo app');
    expect((await b.api('GET', `/v1/apps/${x.appId}/tokens`, { token: x.studioToken })).body).toEqual(tokensBefore);
    expect((await b.api('GET', `/v1/organizations/${x.organizationId}`, { token: x.studioToken })).body.organization.encryption).toBe(false);
    expect((await b.api('GET', `/v1/data-sources/${ds}`)).body.dataSource).toMatchObject({ public: false, accessRules: [] });
    expect((await b.api('GET', '/v1/data-sources/OpenByApi')).status).toBe(404);
  });
});

describe('public data sources expose reads only', () => {
  it('without a token: every read works, every write is 401 and changes nothing', async () => {
    const ds = await dataSource({ name: 'PublicRO', public: true });
    const entry = (await b.api('PUT', `/v1/data-sources/${ds}/data`, { token: x.studioToken, json: { a: 1 } })).body.id;
    await b.api('POST', `/v1/data-sources/${ds}/data`, { token: x.studioToken, json: { entries: [{ a: 1 }, { a: 2 }] } });
    const version = (await b.api('GET', `/v1/data-sources/${ds}/versions`, { token: x.studioToken })).body.versions[0].id;
    const ids = (await b.api('POST', `/v1/data-sources/${ds}/data/query`, { token: x.studioToken, json: {} })).body.entries.map((e: any) => e.id);
    const anon = { token: null };
    for (const [method, path, json] of [
      ['GET', `/v1/data-sources/${ds}`],
      ['GET', `/v1/data-sources/PublicRO`],
      ['POST', `/v1/data-sources/${ds}/data/query`, {}],
      ['GET', `/v1/data-sources/${ds}/data/${ids[0]}`],
      ['GET', `/v1/data-sources/${ds}/indexes/a`],
      ['GET', `/v1/data-sources/${ds}/versions`],
      ['GET', `/v1/data-sources/${ds}/versions/${version}/data`],
    ] as [string, string, unknown?][]) {
      expect((await b.api(method, path, { ...anon, json })).status, `${method} ${path}`).toBe(200);
    }
    const before = (await b.api('POST', `/v1/data-sources/${ds}/data/query`, { token: x.studioToken, json: {} })).body;
    for (const [method, path, json] of [
      ['PUT', `/v1/data-sources/${ds}`, { name: 'renamed' }],
      ['DELETE', `/v1/data-sources/${ds}`],
      ['PUT', `/v1/data-sources/${ds}/data`, { planted: true }],
      ['POST', `/v1/data-sources/${ds}/data`, { entries: [] }],
      ['POST', `/v1/data-sources/${ds}/data`, { entries: [{ planted: true }], append: true }],
      ['PUT', `/v1/data-sources/${ds}/data/${ids[0]}`, { a: 99 }],
      ['DELETE', `/v1/data-sources/${ds}/data/${ids[0]}`],
      ['POST', `/v1/data-sources/${ds}/data/query`, { type: 'delete', where: {} }],
      ['POST', `/v1/data-sources/${ds}/commit`, { entries: [] }],
      ['POST', `/v1/data-sources/${ds}/commit`, { entries: [{ data: { planted: true } }], append: true }],
      ['POST', `/v1/data-sources/${ds}/versions/${version}/restore`],
      ['GET', `/v1/data-sources/${ds}/logs`],
    ] as [string, string, unknown?][]) {
      const res = await b.api(method, path, { ...anon, json });
      expect(res.status, `${method} ${path}`).toBe(401);
      // A token of another app is refused as well.
      const other = await b.api(method, path, { token: otherApp.token, json });
      expect(other.status, `${method} ${path} (other app)`).toBe(403);
    }
    expect((await b.api('POST', `/v1/data-sources/${ds}/data/query`, { token: x.studioToken, json: {} })).body).toEqual(before);
    expect(entry).toBeGreaterThan(0);
  });
});

describe('managing a data source needs every right its access rules give', () => {
  it('a token of the owning app that the rules do not grant cannot rename, re-hook or delete it', async () => {
    // Only `second` may read and write; the app's default token gets nothing under the rules.
    const rules = [{ type: ['select', 'insert', 'update', 'delete'], allow: { tokens: [second.id] } }];
    const ds = await dataSource({ name: 'Payroll', accessRules: rules });
    await b.api('PUT', `/v1/data-sources/${ds}/data`, { token: second.token, json: { salary: 100 } });
    const hook = [{ type: 'web', runOn: ['insert'], payload: { url: 'http://127.0.0.1:9/steal' } }];
    for (const [method, json] of [
      ['PUT', { hooks: hook }],
      ['PUT', { name: 'Renamed' }],
      ['DELETE', undefined],
    ] as [string, unknown][]) {
      const res = await b.api(method, `/v1/data-sources/${ds}`, { token: x.apiToken, json });
      // No right at all under the rules: not visible, as if missing (issue 15, no probing).
      expect(res.status, `${method} ${JSON.stringify(json)}`).toBe(404);
    }
    // The organization-wide variant: an app of the organization without rights under the rules.
    const orgDs = await dataSource({ name: 'OrgPayroll', accessRules: rules }, `organizationId=${x.organizationId}`);
    expect((await b.api('PUT', `/v1/data-sources/${orgDs}`, { token: otherApp.token, json: { hooks: hook } })).status).toBe(404);
    expect((await b.api('DELETE', `/v1/data-sources/${orgDs}`, { token: otherApp.token })).status).toBe(404);
    // The granted token manages it; nothing the refused tokens sent was applied.
    const view = await b.api('GET', `/v1/data-sources/${ds}`, { token: second.token });
    expect(view.body.dataSource).toMatchObject({ name: 'Payroll', hooks: [] });
    expect((await b.api('PUT', `/v1/data-sources/${ds}`, { token: second.token, json: { definition: { v: 1 } } })).status).toBe(200);
    expect((await b.api('GET', `/v1/data-sources/${orgDs}`, { token: x.studioToken })).body.dataSource.hooks).toEqual([]);
  });

  it('readers that may not manage a data source see its web hooks without secrets', async () => {
    const ds = await dataSource({
      name: 'HookedPublic',
      public: true,
      hooks: [
        { type: 'web', runOn: ['insert'], payload: { url: 'https://user:pw@hooks.example.com/in?key=s3cret', headers: { Authorization: 'Bearer s3cret' } } },
      ],
    });
    for (const token of [null, otherApp.token]) {
      const res = await b.api('GET', `/v1/data-sources/${ds}`, { token });
      expect(res.status).toBe(200);
      expect(JSON.stringify(res.body)).not.toContain('s3cret');
      expect(res.body.dataSource.hooks[0].payload).toEqual({ url: 'https://hooks.example.com/in', headers: { Authorization: '[redacted]' } });
    }
    const list = await b.api('GET', `/v1/data-sources?organizationId=${x.organizationId}`, { token: otherApp.token });
    expect(JSON.stringify(list.body)).not.toContain('s3cret');
    // Managers see the hook as configured.
    const full = await b.api('GET', `/v1/data-sources/${ds}`, { token: x.apiToken });
    expect(full.body.dataSource.hooks[0].payload.headers.Authorization).toBe('Bearer s3cret');
  });

  it('hidden columns cannot be probed through `where` on a version’s entries', async () => {
    const ds = await dataSource({ name: 'Salaries', accessRules: [{ type: ['select'], allow: 'loggedIn', exclude: ['salary'] }] });
    await b.api('POST', `/v1/data-sources/${ds}/data`, {
      token: x.studioToken,
      json: {
        entries: [
          { name: 'ann', salary: 100 },
          { name: 'bob', salary: 200 },
        ],
      },
    });
    await b.api('POST', `/v1/data-sources/${ds}/data`, { token: x.studioToken, json: { entries: [] } });
    const version = (await b.api('GET', `/v1/data-sources/${ds}/versions`, { token: x.apiToken })).body.versions[0].id;
    const all = await b.api('POST', `/v1/data-sources/${ds}/versions/${version}/data`, { token: x.apiToken, json: {} });
    expect(all.body.entries.map((e: any) => e.data)).toEqual([{ name: 'ann' }, { name: 'bob' }]);
    const probe = await b.api('POST', `/v1/data-sources/${ds}/versions/${version}/data`, { token: x.apiToken, json: { where: { salary: { $gt: 150 } } } });
    expect(probe.status).toBe(200);
    expect(probe.body.entries).toEqual([]);
    const query = await b.api('POST', `/v1/data-sources/${ds}/versions/${version}/data`, { token: x.studioToken, json: { where: { salary: { $gt: 150 } } } });
    expect(query.body.entries.map((e: any) => e.data.name)).toEqual(['bob']);
  });
});
