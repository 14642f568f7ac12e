import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestBackend, type TestBackend } from '../helpers/server.js';

describe('data sources: tokens, public flag and security rules', () => {
  let b: TestBackend;
  let appId: number;
  let organizationId: number;
  let studioToken: string;
  let otherAppToken: { id: number; token: string };
  let secondToken: { id: number; token: string };
  beforeAll(async () => {
    b = await startTestBackend();
    ({ appId, organizationId, studioToken } = b.server.bootstrap);
    // A second token of the same app, and a token of another app of the organization.
    const created = await b.api('POST', `/v1/apps/${appId}/tokens`, { token: studioToken, json: { name: 'Second' } });
    expect(created.status).toBe(201);
    secondToken = created.body.token;
    expect((await b.api('POST', `/v1/apps/${appId}/tokens`, { json: { name: 'x' } })).status).toBe(403); // API tokens cannot manage tokens
    const app2 = await b.api('POST', `/v1/organizations/${organizationId}/apps`, { token: studioToken, json: { name: 'Second app' } });
    expect(app2.status).toBe(201);
    otherAppToken = (await b.api('POST', `/v1/apps/${app2.body.app.id}/tokens`, { token: studioToken, json: { name: 'App 2' } })).body.token;
  });
  afterAll(() => b.close());

  const denied = (res: { status: number; body: any }, name: string, verb: string) => {
    expect(res.status).toBe(403);
    const message = `The security rules for the data source "${name}" do not allow this app to ${verb} data.`;
    expect(res.body).toEqual({ error: { code: 'datasource.access', message }, message });
  };

  it('lists, creates and deletes API and client tokens of an app (studio only)', async () => {
    const list = await b.api('GET', `/v1/apps/${appId}/tokens`, { token: studioToken });
    expect(list.body.tokens.map((t: any) => [t.name, t.kind])).toEqual([
      ['Default API token', 'api'],
      ['Default client token', 'client'],
      ['Second', 'api'],
    ]);
    const temp = await b.api('POST', `/v1/apps/${appId}/tokens`, { token: studioToken, json: { name: 'Temp' } });
    expect((await b.api('GET', `/v1/apps/${appId}`, { token: temp.body.token.token })).status).toBe(200);
    expect((await b.api('DELETE', `/v1/apps/${appId}/tokens/${temp.body.token.id}`, { token: studioToken })).status).toBe(200);
    expect((await b.api('GET', `/v1/apps/${appId}`, { token: temp.body.token.token })).status).toBe(401);
    expect((await b.api('DELETE', `/v1/apps/${appId}/tokens/${temp.body.token.id}`, { token: studioToken })).status).toBe(404);
    expect((await b.api('GET', `/v1/apps/${appId}/tokens`)).status).toBe(403);
  });

  it('without rules: the owning app’s tokens and studio tokens only; no token is 401', async () => {
    const ds = await b.client.DataSources.create({ name: 'Private' });
    await (await b.client.DataSources.connect(ds.id)).insert({ a: 1 });
    expect((await b.api('POST', `/v1/data-sources/${ds.id}/data/query`, { token: secondToken.token, json: {} })).status).toBe(200);
    expect((await b.api('POST', `/v1/data-sources/${ds.id}/data/query`, { token: studioToken, json: {} })).status).toBe(200);
    const anonymous = await b.api('POST', `/v1/data-sources/${ds.id}/data/query`, { token: null, json: {} });
    expect(anonymous.status).toBe(401);
    expect((await b.api('GET', `/v1/data-sources/${ds.id}`, { token: null })).status).toBe(401);
  });

  it('a public data source is readable without a token, but not writable', async () => {
    const ds = await b.client.DataSources.create({ name: 'Open' });
    await (await b.client.DataSources.connect(ds.id)).insert({ a: 1 });
    // only studio tokens may flip the flag
    expect((await b.api('PUT', `/v1/data-sources/${ds.id}`, { json: { public: true } })).status).toBe(403);
    await b.studio.DataSources.update(ds.id, { public: true });
    const read = await b.api('POST', `/v1/data-sources/${ds.id}/data/query`, { token: null, json: {} });
    expect(read.status).toBe(200);
    expect(read.body.entries).toHaveLength(1);
    expect((await b.api('GET', '/v1/data-sources/Open', { token: null })).body.dataSource.id).toBe(ds.id);
    expect((await b.api('PUT', `/v1/data-sources/${ds.id}/data`, { token: null, json: { b: 2 } })).status).toBe(401);
    // an unknown token is never downgraded to anonymous
    expect((await b.api('POST', `/v1/data-sources/${ds.id}/data/query`, { token: 'nope', json: {} })).status).toBe(401);
  });

  it('evaluates rules top to bottom: first grant wins; token lists; loggedIn; all; disabled rules', async () => {
    const ds = await b.client.DataSources.create({ name: 'Ruled' });
    const conn = await b.client.DataSources.connect(ds.id);
    const entry = await conn.insert({ name: 'Ann', salary: 10, email: 'a@x' });
    const rules = [
      { type: ['select'], allow: { tokens: [secondToken.id] }, exclude: ['salary'] },
      { type: ['select', 'insert'], allow: 'loggedIn', include: ['name'] },
      { type: ['delete'], allow: 'all', enabled: false },
      { type: ['update'], allow: 'all' },
    ];
    const setRules = await b.api('PUT', `/v1/data-sources/${ds.id}`, { token: studioToken, json: { accessRules: rules } });
    expect(setRules.status).toBe(200);
    expect(setRules.body.dataSource.accessRules).toEqual(rules);

    // secondToken: first rule grants select without salary
    const second = await b.api('POST', `/v1/data-sources/${ds.id}/data/query`, { token: secondToken.token, json: {} });
    expect(second.body.entries[0].data).toEqual({ name: 'Ann', email: 'a@x' });
    const secondGet = await b.api('GET', `/v1/data-sources/${ds.id}/data/${entry.id}`, { token: secondToken.token });
    expect(secondGet.body.data).toEqual({ name: 'Ann', email: 'a@x' });
    // excluded columns cannot be probed through where either
    const probe = await b.api('POST', `/v1/data-sources/${ds.id}/data/query`, { token: secondToken.token, json: { where: { salary: 10 } } });
    expect(probe.body.entries).toEqual([]);
    // default token: second rule (loggedIn) grants select with only name
    const first = await conn.find();
    expect(first[0]!.data).toEqual({ name: 'Ann' });
    expect(await conn.getIndexes(['name', 'salary'])).toEqual({ name: ['Ann'], salary: [] });
    // anonymous: update is allowed to all, select is not
    expect((await b.api('POST', `/v1/data-sources/${ds.id}/data/query`, { token: null, json: {} })).status).toBe(401);
    // a token of another app of the organization is logged in: rule 2 applies
    const other = await b.api('POST', `/v1/data-sources/${ds.id}/data/query`, { token: otherAppToken.token, json: {} });
    expect(other.body.entries[0].data).toEqual({ name: 'Ann' });
    expect((await b.api('PUT', `/v1/data-sources/${ds.id}/data/${entry.id}`, { token: null, json: { salary: 11 } })).status).toBe(201);
    // delete: the only delete rule is disabled → denied even for the owning app
    denied(await b.api('DELETE', `/v1/data-sources/${ds.id}/data/${entry.id}`), 'Ruled', 'delete');
    denied(await b.api('POST', `/v1/data-sources/${ds.id}/data/query`, { json: { type: 'delete', where: {} } }), 'Ruled', 'delete');
    denied(await b.api('POST', `/v1/data-sources/${ds.id}/data`, { json: { entries: [] } }), 'Ruled', 'delete');
    // insert granted to loggedIn tokens only
    expect((await b.api('PUT', `/v1/data-sources/${ds.id}/data`, { json: { name: 'Bo' } })).status).toBe(201);
    expect((await b.api('PUT', `/v1/data-sources/${ds.id}/data`, { token: null, json: { name: 'Cy' } })).status).toBe(401);
    // studio tokens bypass the rules
    const all = await b.api('POST', `/v1/data-sources/${ds.id}/data/query`, { token: studioToken, json: { order: [['data.name', 'ASC']] } });
    expect(all.body.entries.map((e: any) => e.data)).toEqual([{ name: 'Ann', salary: 11, email: 'a@x' }, { name: 'Bo' }]);
    // nothing was deleted by the denied calls
    expect(all.body.entries).toHaveLength(2);
    // commit needs the rights of every change it makes, and read rights to return entries
    const noRead = await b.api('POST', `/v1/data-sources/${ds.id}/commit`, {
      token: null,
      json: { append: true, entries: [{ id: entry.id, data: { name: 'Z' } }] },
    });
    expect(noRead.status).toBe(401);
    denied(
      await b.api('POST', `/v1/data-sources/${ds.id}/commit`, {
        token: otherAppToken.token,
        json: { append: true, entries: [{ data: { name: 'Z' } }], delete: [entry.id] },
      }),
      'Ruled',
      'delete',
    );
    const blind = await b.api('POST', `/v1/data-sources/${ds.id}/commit`, {
      token: null,
      json: { append: true, returnEntries: false, entries: [{ id: entry.id, data: { name: 'Z' } }] },
    });
    expect(blind.status).toBe(200);
  });

  it('refuses invalid rules with 400 naming the field', async () => {
    const ds = await b.client.DataSources.create({ name: 'BadRules' });
    for (const [rules, field] of [
      ['x', 'accessRules'],
      [[{ type: ['read'], allow: 'all' }], 'accessRules[0].type'],
      [[{ type: ['select'], allow: 'everyone' }], 'accessRules[0].allow'],
      [[{ type: ['select'], allow: { tokens: ['a'] } }], 'accessRules[0].allow.tokens'],
      [[{ type: ['select'], allow: 'all', include: 'name' }], 'accessRules[0].include'],
    ] as const) {
      const res = await b.api('PUT', `/v1/data-sources/${ds.id}`, { token: studioToken, json: { accessRules: rules } });
      expect(res.status).toBe(400);
      expect(res.body.error.message).toContain(field);
    }
    expect((await b.api('PUT', `/v1/data-sources/${ds.id}`, { json: { accessRules: [] } })).body.error.code).toBe('STUDIO_ONLY');
  });

  it('keeps data sources of one app away from API tokens of another app', async () => {
    const own = await b.client.DataSources.create({ name: 'AppOnly' });
    for (const [method, path, json] of [
      ['POST', `/v1/data-sources/${own.id}/data/query`, {}],
      ['PUT', `/v1/data-sources/${own.id}/data`, { a: 1 }],
      ['POST', `/v1/data-sources/${own.id}/commit`, { entries: [], returnEntries: false }],
    ] as const) {
      // Another app's data source is not visible to this token: as if it did not exist (issue 15, no probing).
      const res = await b.api(method, path, { token: otherAppToken.token, json });
      expect(res.status).toBe(404);
      expect(res.body.error).toEqual({ code: 'DATA_SOURCE_NOT_FOUND', message: `Data source ${own.id} not found` });
    }
    expect((await b.api('GET', `/v1/data-sources/${own.id}`, { token: otherAppToken.token })).status).toBe(404);
    expect((await b.api('PUT', `/v1/data-sources/${own.id}`, { token: otherAppToken.token, json: { name: 'Stolen' } })).status).toBe(404);
    expect((await b.api('DELETE', `/v1/data-sources/${own.id}`, { token: otherAppToken.token })).status).toBe(404);
    expect((await b.api('GET', `/v1/data-sources?appId=${appId}`, { token: otherAppToken.token })).status).toBe(404);
    expect((await b.client.DataSources.getById(own.id)).name).toBe('AppOnly');
    const app2 = await b.api('POST', `/v1/data-sources?organizationId=${organizationId}`, { token: studioToken, json: { name: 'OrgLevel' } });
    expect(app2.status).toBe(201);
    expect(app2.body.dataSource.appId).toBeNull();
    // an org-level data source without rules is open to the apps of the organization
    expect((await b.api('POST', `/v1/data-sources/${app2.body.dataSource.id}/data/query`, { json: {} })).status).toBe(200);
    expect((await b.api('POST', `/v1/data-sources/${app2.body.dataSource.id}/data/query`, { token: otherAppToken.token, json: {} })).status).toBe(200);
  });

  it('an append of no entries still needs the insert right', async () => {
    const own = await b.client.DataSources.create({ name: 'AppendNothing' });
    const path = `/v1/data-sources/${own.id}/data`;
    expect((await b.api('POST', path, { token: null, json: { entries: [], append: true } })).status).toBe(401);
    expect((await b.api('POST', path, { token: otherAppToken.token, json: { entries: [], append: true } })).status).toBe(404);
    expect((await b.api('POST', path, { json: { entries: [], append: true } })).status).toBe(200);
  });

  it('writes answer only what the caller may read; a query delete cannot filter on hidden columns', async () => {
    const ds = await b.client.DataSources.create({ name: 'Hidden' });
    const rules = [
      { type: ['select', 'update', 'delete'], allow: { tokens: [secondToken.id] }, exclude: ['secret'] },
      { type: ['update', 'insert'], allow: 'loggedIn' },
    ];
    expect((await b.api('PUT', `/v1/data-sources/${ds.id}`, { token: studioToken, json: { accessRules: rules } })).status).toBe(200);
    const created = await b.api('PUT', `/v1/data-sources/${ds.id}/data`, { token: studioToken, json: { name: 'a', secret: 's3cr3t' } });
    const id = created.body.entry?.id ?? created.body.id;
    expect(id).toEqual(expect.any(Number));
    const as = (token: string) => ({ token });
    // A reader with a column filter: the update's answer hides the column like a read does.
    const read = await b.api('GET', `/v1/data-sources/${ds.id}/data/${id}`, as(secondToken.token));
    expect(read.status).toBe(200);
    const updated = await b.api('PUT', `/v1/data-sources/${ds.id}/data/${id}`, { ...as(secondToken.token), json: {} });
    expect(updated.status).toBe(201); // the spec's status for an entry update
    expect(JSON.stringify(updated.body)).not.toContain('s3cr3t');
    // An update-only (and insert-only) caller gets back the columns it sent, nothing else.
    const apiToken = b.server.bootstrap.apiToken;
    expect((await b.api('GET', `/v1/data-sources/${ds.id}/data/${id}`, as(apiToken))).status).toBe(403);
    const blind = await b.api('PUT', `/v1/data-sources/${ds.id}/data/${id}`, { ...as(apiToken), json: { name: 'b' } });
    expect(blind.status).toBe(201);
    expect(JSON.stringify(blind.body)).not.toContain('s3cr3t');
    expect(JSON.stringify(blind.body)).toContain('"name":"b"');
    const inserted = await b.api('PUT', `/v1/data-sources/${ds.id}/data`, { ...as(apiToken), json: { note: 'x' } });
    expect(inserted.status).toBe(201);
    expect(JSON.stringify(inserted.body)).toContain('"note":"x"');
    // The delete's where sees the same columns: filtering on the hidden one matches nothing and deletes nothing.
    const probe = await b.api('POST', `/v1/data-sources/${ds.id}/data/query`, {
      ...as(secondToken.token),
      json: { type: 'delete', where: { secret: 's3cr3t' } },
    });
    expect(probe.status).toBe(200);
    expect(probe.body).toEqual({ deletedCount: 0 });
    const all = await b.api('POST', `/v1/data-sources/${ds.id}/data/query`, { token: studioToken, json: {} });
    expect(all.body.entries.map((e: any) => e.data.secret).filter(Boolean)).toEqual(['s3cr3t']);
  });
});
