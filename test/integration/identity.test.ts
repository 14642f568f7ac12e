import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Bootstrap } from '../../src/server/index.js';
import { startTestBackend, type TestBackend } from '../helpers/server.js';

/** `GET v1/user` and `GET v1/organizations`: who a token is, and where it works (issue 16, items 1 and 2). */
describe('identity of a token', () => {
  let b: TestBackend;
  let x: Bootstrap;
  let foreign: Bootstrap;
  let tokenIds: Record<string, number>;
  beforeAll(async () => {
    b = await startTestBackend();
    x = b.server.bootstrap;
    foreign = await b.server.createOrganization('Foreign corp');
    const tokens = (await b.api('GET', `/v1/apps/${x.appId}/tokens`, { token: x.studioToken })).body.tokens as { id: number; token: string }[];
    tokenIds = Object.fromEntries(tokens.map((t) => [t.token, t.id]));
  });
  afterAll(() => b?.close());

  it('an API token reports its named API user, with the id its changes are recorded under', async () => {
    const res = await b.api('GET', '/v1/user');
    expect(res.status).toBe(200);
    const id = tokenIds[x.apiToken]!;
    expect(res.body).toEqual({
      user: { id, email: `api-token-${id}@users.invalid`, firstName: 'Default API token', lastName: '', fullName: 'Default API token' },
    });
    // The same user as the one data source versions name for this token's changes.
    const ds = (await b.api('POST', `/v1/data-sources?appId=${x.appId}`, { json: { name: 'Who' } })).body.dataSource;
    await b.api('POST', `/v1/data-sources/${ds.id}/data`, { json: { entries: [{ a: 1 }] } });
    const [version] = (await b.api('GET', `/v1/data-sources/${ds.id}/versions`)).body.versions;
    expect(version.userId).toBe(id);
    expect(version.user.fullName).toBe(res.body.user.fullName);
  });

  it('a new API token reports the name it was given; a studio token its studio user', async () => {
    const created = (await b.api('POST', `/v1/apps/${x.appId}/tokens`, { token: x.studioToken, json: { name: 'Nightly sync' } })).body.token;
    const mine = await b.api('GET', '/v1/user', { token: created.token });
    expect(mine.body.user).toMatchObject({ id: created.id, firstName: 'Nightly sync', fullName: 'Nightly sync' });
    const studio = await b.api('GET', '/v1/user', { token: x.studioToken });
    expect(studio.status).toBe(200);
    expect(studio.body.user.fullName).toBe('Studio');
    expect(studio.body.user.email).toMatch(/^studio-token-\d+@users\.invalid$/);
  });

  it('refuses no token and unknown tokens (401) and page tokens (403)', async () => {
    for (const path of ['/v1/user', '/v1/organizations']) {
      const none = await b.api('GET', path, { token: null });
      expect(none.status).toBe(401);
      expect(none.body).toMatchObject({ error: { code: 'MISSING_TOKEN' }, message: expect.any(String) });
      const unknown = await b.api('GET', path, { token: 'iar_api_not-a-token' });
      expect(unknown.status).toBe(401);
      expect(unknown.body.error.code).toBe('INVALID_TOKEN');
      const page = await b.api('GET', path, { token: x.clientToken });
      expect(page.status).toBe(403);
      expect(page.body.error.code).toBe('CLIENT_TOKEN_FORBIDDEN');
    }
  });

  it('works through the client library: Client.User.get() and organizations()', async () => {
    expect(await b.client.User.get()).toMatchObject({ id: tokenIds[x.apiToken], fullName: 'Default API token' });
    expect(await b.studio.User.organizations()).toEqual([{ id: x.organizationId, name: 'Demo organization', encryption: false }]);
  });

  it('lists the organization of the token only, never another tenant', async () => {
    const mine = await b.api('GET', '/v1/organizations');
    expect(mine.status).toBe(200);
    expect(mine.body).toEqual({ organizations: [{ id: x.organizationId, name: 'Demo organization', encryption: false }] });
    const theirs = await b.api('GET', '/v1/organizations', { token: foreign.apiToken });
    expect(theirs.body.organizations).toEqual([{ id: foreign.organizationId, name: 'Foreign corp', encryption: false }]);
    expect(JSON.stringify(theirs.body)).not.toContain('Demo organization');
    const studio = await b.api('GET', '/v1/organizations', { token: x.studioToken });
    expect(studio.body.organizations.map((o: { id: number }) => o.id)).toEqual([x.organizationId]);
  });
});
