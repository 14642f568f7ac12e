import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Bootstrap } from '../../src/server/index.js';
import { startTestBackend, type TestBackend } from '../helpers/server.js';

/**
 * Isolation between tenants: every attempt of a token of organization X (its API token or its studio token)
 * on anything of organization Y answers 403 or 404 and changes nothing; likewise between two apps of one
 * organization for app-owned things.
 */

const fn = (name: string, settings: Record<string, unknown>) => ({ functionPackage: `com.client.function.${name}`, settings });
const GUID = '8f14e45f-ceea-4e7a-9c5a-0b3c3f8f0a11';

let b: TestBackend;
let x: Bootstrap; // the bootstrap organization (attacker side)
let y: Bootstrap; // another organization (victim side)
let otherAppX: { appId: number; token: string }; // a second app of organization X

/** Everything organization Y owns, created through its own tokens. */
const Y = {} as {
  ds: number;
  orgDs: number;
  entry: number;
  file: number;
  version: number;
  notification: number;
  subscription: number;
  action: number;
  page: number;
  apiTokenId: number;
};
let dsX: number;

async function ok<T = any>(res: Promise<{ status: number; body: any }>, status = 200): Promise<T> {
  const r = await res;
  if (r.status !== status) throw new Error(`expected ${status}, got ${r.status}: ${JSON.stringify(r.body)}`);
  return r.body as T;
}

/** What organization Y sees of its own things (compared before and after the attacks). */
async function stateOfY() {
  const t = { token: y.studioToken };
  const a = `/v1/apps/${y.appId}`;
  return {
    app: (await b.api('GET', a, t)).body,
    org: (await b.api('GET', `/v1/organizations/${y.organizationId}`, t)).body,
    tokens: (await b.api('GET', `${a}/tokens`, t)).body,
    dataSources: (await b.api('GET', `/v1/data-sources?organizationId=${y.organizationId}`, t)).body,
    ds: (await b.api('GET', `/v1/data-sources/${Y.ds}`, t)).body,
    entries: (await b.api('POST', `/v1/data-sources/${Y.ds}/data/query`, { ...t, json: {} })).body,
    orgEntries: (await b.api('POST', `/v1/data-sources/${Y.orgDs}/data/query`, { ...t, json: {} })).body,
    versions: (await b.api('GET', `/v1/data-sources/${Y.ds}/versions`, t)).body,
    notifications: (await b.api('GET', `${a}/notifications?includeDeleted=true`, t)).body,
    subscriptions: (await b.api('GET', `${a}/subscriptions`, t)).body,
    actions: (await b.api('GET', `${a}/tasks`, t)).body,
    logs: (await b.api('GET', `${a}/tasks/logs`, t)).body,
    pages: (await b.api('GET', `${a}/pages`, t)).body,
    functions: (await b.api('GET', `${a}/tasks/functions`, t)).body,
    analytics: (await b.api('GET', `${a}/analytics`, t)).body,
  };
}

beforeAll(async () => {
  b = await startTestBackend({ limits: { runTimeoutMs: 5000, runsPerMinute: 1000 } });
  x = b.server.bootstrap;
  y = await b.server.createOrganization('Victim');
  const ys = { token: y.studioToken };
  const yApi = { token: y.apiToken };
  const a = `/v1/apps/${y.appId}`;

  // A second app of X with its own API token.
  const app2 = await ok(b.api('POST', `/v1/organizations/${x.organizationId}/apps`, { token: x.studioToken, json: { name: 'X2' } }), 201);
  const t2 = await ok(b.api('POST', `/v1/apps/${app2.app.id}/tokens`, { token: x.studioToken, json: {} }), 201);
  otherAppX = { appId: app2.app.id, token: t2.token.token };

  // Y: an app data source named like one of X, an organization-level one, an entry with a file, a version.
  Y.ds = (await ok(b.api('POST', `/v1/data-sources?appId=${y.appId}`, { ...yApi, json: { name: 'Shared' } }), 201)).dataSource.id;
  Y.orgDs = (await ok(b.api('POST', `/v1/data-sources?organizationId=${y.organizationId}`, { ...ys, json: { name: 'OrgWide' } }), 201)).dataSource.id;
  dsX = (await ok(b.api('POST', `/v1/data-sources?appId=${x.appId}`, { json: { name: 'Shared' } }), 201)).dataSource.id;
  await ok(b.api('POST', `/v1/data-sources/${dsX}/data`, { json: { entries: [{ owner: 'x' }] } }));
  await ok(b.api('POST', `/v1/data-sources/${Y.ds}/data`, { ...yApi, json: { entries: [{ owner: 'y', secret: 's1' }] } }));
  await ok(b.api('POST', `/v1/data-sources/${Y.ds}/data`, { ...yApi, json: { entries: [{ owner: 'y', secret: 's2' }], append: true } }));
  await ok(b.api('POST', `/v1/data-sources/${Y.orgDs}/data`, { ...yApi, json: { entries: [{ owner: 'y-org' }] } }));
  const form = new FormData();
  form.set('title', 'with file');
  form.set('doc', new Blob(['secret file of Y'], { type: 'text/plain' }), 'y.txt');
  const up = await fetch(`${b.url}/v1/data-sources/${Y.ds}/data`, { method: 'PUT', headers: { 'Auth-token': y.apiToken }, body: form });
  expect(up.status).toBe(201);
  const uploaded = await up.json();
  Y.entry = uploaded.id;
  Y.file = uploaded.data.docMediaFileId;
  Y.version = (await ok(b.api('GET', `/v1/data-sources/${Y.ds}/versions`, yApi))).versions[0].id;

  // Y: a notification, a subscription, an action (with a log), a screen, a custom function, analytics.
  Y.notification = (await ok(b.api('PUT', `${a}/notifications`, { ...yApi, json: { data: { text: 'for Y' }, status: 'published' } }), 201)).notification.id;
  Y.subscription = (
    await ok(b.api('POST', `${a}/subscriptions`, { ...yApi, json: { device: 'd', platform: 'android', token: 'push-token-y', uuid: GUID } }), 201)
  ).subscription.id;
  Y.page = (await ok(b.api('POST', `${a}/pages`, { ...yApi, json: { name: 'Home', script: 'Client.Page.onRemoteExecution(() => 1)' } }), 201)).page.id;
  Y.action = (
    await ok(b.api('POST', `${a}/tasks`, { ...yApi, json: { name: 'yaction', environment: 'server', functions: [fn('return', { value: 'y' })] } }), 201)
  ).action.id;
  await ok(b.api('POST', `${a}/tasks/${Y.action}/publish`, { ...yApi, json: { publish: true } }));
  await ok(b.api('POST', `${a}/tasks/${Y.action}/run`, { ...yApi, json: { wait: true } }));
  await ok(b.api('POST', `${a}/tasks/functions`, { ...ys, json: { package: 'com.victim.function.secret', code: '() => "y"' } }), 201);
  await ok(b.api('POST', `${a}/analytics`, { ...yApi, json: { events: [{ type: 'analytics.pageView', data: { page: 'y' } }] } }));
  Y.apiTokenId = (await ok(b.api('GET', `${a}/tokens`, ys))).tokens[0].id;
}, 30_000);
afterAll(() => b?.close());

type Attempt = [method: string, path: string, json?: unknown];

/** Every route, aimed at organization Y's things. */
function attemptsOnY(): Attempt[] {
  const a = `/v1/apps/${y.appId}`;
  const ds = `/v1/data-sources/${Y.ds}`;
  const org = `/v1/data-sources/${Y.orgDs}`;
  const byName = `/v1/data-sources/Shared?organizationId=${y.organizationId}`;
  const byNameData = `/v1/data-sources/Shared/data?organizationId=${y.organizationId}`;
  return [
    ['GET', a],
    ['PUT', a, { name: 'pwned' }],
    ['GET', `${a}/tokens`],
    ['POST', `${a}/tokens`, { name: 'mine now' }],
    ['DELETE', `${a}/tokens/${Y.apiTokenId}`],
    ['GET', `/v1/organizations/${y.organizationId}`],
    ['PUT', `/v1/organizations/${y.organizationId}`, { encryption: true }],
    ['POST', `/v1/organizations/${y.organizationId}/apps`, { name: 'planted' }],
    // data sources, by id
    ['GET', `/v1/data-sources?organizationId=${y.organizationId}`],
    ['GET', `/v1/data-sources?appId=${y.appId}`],
    ['POST', `/v1/data-sources?appId=${y.appId}`, { name: 'planted' }],
    ['POST', `/v1/data-sources?organizationId=${y.organizationId}`, { name: 'planted' }],
    ['GET', ds],
    ['PUT', ds, { name: 'renamed' }],
    ['PUT', ds, { public: true }],
    ['DELETE', ds],
    ['POST', `${ds}/data`, { entries: [] }],
    ['POST', `${ds}/data`, { entries: [{ planted: true }], append: true }],
    ['PUT', `${ds}/data`, { planted: true }],
    ['POST', `${ds}/data/query`, {}],
    ['POST', `${ds}/data/query`, { type: 'delete', where: {} }],
    ['GET', `${ds}/data/${Y.entry}`],
    ['PUT', `${ds}/data/${Y.entry}`, { title: 'changed' }],
    ['DELETE', `${ds}/data/${Y.entry}`],
    ['GET', `${ds}/indexes/owner,secret`],
    ['POST', `${ds}/commit`, { entries: [] }],
    ['GET', `${ds}/versions`],
    ['GET', `${ds}/versions/${Y.version}/data`],
    ['POST', `${ds}/versions/${Y.version}/data`, { where: { secret: 's1' } }],
    ['POST', `${ds}/versions/${Y.version}/restore`],
    ['GET', `${ds}/files/${Y.file}`],
    ['GET', `${ds}/logs`],
    ['GET', org],
    ['POST', `${org}/data/query`, {}],
    ['PUT', `${org}/data`, { planted: true }],
    ['DELETE', org],
    // data sources, by name in Y's organization
    ['GET', byName],
    ['PUT', byName, { name: 'renamed' }],
    ['DELETE', byName],
    ['POST', `/v1/data-sources/Shared/data/query?organizationId=${y.organizationId}`, {}],
    ['PUT', byNameData, { planted: true }],
    ['POST', byNameData, { entries: [] }],
    ['GET', `/v1/data-sources/Shared/versions?organizationId=${y.organizationId}`],
    ['GET', `/v1/data-sources/Shared/files/${Y.file}?organizationId=${y.organizationId}`],
    // notifications and subscriptions
    ['GET', `${a}/notifications`],
    ['POST', `${a}/notifications`, {}],
    ['PUT', `${a}/notifications`, { data: { planted: true }, status: 'published' }],
    ['POST', `${a}/notifications/batch`, { notifications: [{ data: { planted: true } }] }],
    ['POST', `${a}/notifications/mark-as-read`, { recipientId: GUID, entries: [Y.notification] }],
    ['PUT', `${a}/notifications/${Y.notification}`, { data: { text: 'changed' } }],
    ['DELETE', `${a}/notifications/${Y.notification}`],
    ['GET', `${a}/notifications/${Y.notification}/deliveries`],
    ['POST', `${a}/subscriptions`, { device: 'd', platform: 'android', token: 'push-token-y', uuid: GUID }],
    ['GET', `${a}/subscriptions`],
    ['GET', `${a}/subscriptions/public-key`],
    // actions, runs, logs, screens, functions, compile page
    ['GET', `${a}/tasks`],
    ['POST', `${a}/tasks`, { name: 'planted', functions: [] }],
    ['GET', `${a}/tasks/${Y.action}`],
    ['GET', `${a}/tasks/yaction`],
    ['PUT', `${a}/tasks/${Y.action}`, { name: 'renamed' }],
    ['DELETE', `${a}/tasks/${Y.action}`],
    ['POST', `${a}/tasks/${Y.action}/publish`, { publish: false }],
    ['POST', `${a}/tasks/${Y.action}/run`, { wait: true }],
    ['POST', `${a}/tasks/yaction/run`, {}],
    ['GET', `${a}/tasks/logs`],
    ['POST', `${a}/tasks/logs`, {}],
    [
      'POST',
      `${a}/tasks/logs`,
      {
        logs: [
          {
            deviceKey: 'planted-key',
            type: 'app.action.completed',
            createdAt: new Date().toISOString(),
            data: { mode: 'on-demand', duration: 1, actionId: Y.action },
          },
        ],
      },
    ],
    ['GET', `${a}/tasks/${Y.action}/compile?html`],
    ['GET', `${a}/tasks/functions`],
    ['POST', `${a}/tasks/functions`, { package: 'com.evil.function.x', code: '() => 1' }],
    ['GET', `${a}/pages`],
    ['POST', `${a}/pages`, { name: 'planted' }],
    ['GET', `${a}/pages/${Y.page}`],
    ['PUT', `${a}/pages/${Y.page}`, { script: 'stolen()' }],
    ['POST', `${a}/pages/${Y.page}/publish`, { publish: true }],
    ['DELETE', `${a}/pages/${Y.page}`],
    ['POST', `${a}/analytics`, { events: [{ type: 'analytics.pageView', data: { planted: true } }] }],
    ['GET', `${a}/analytics`],
  ];
}

describe('isolation between organizations', () => {
  it('RunningServer.createOrganization gives a separate organization, app and tokens', async () => {
    expect(y.organizationId).not.toBe(x.organizationId);
    expect(y.appId).not.toBe(x.appId);
    expect((await b.api('GET', `/v1/apps/${y.appId}`, { token: y.apiToken })).status).toBe(200);
    expect((await b.api('GET', `/v1/organizations/${y.organizationId}`, { token: y.studioToken })).status).toBe(200);
  });

  for (const who of ['API token', 'studio token'] as const) {
    it(`every route refuses the ${who} of another organization (403/404) and nothing of Y changes`, async () => {
      const token = who === 'API token' ? x.apiToken : x.studioToken;
      const before = await stateOfY();
      const leaks: string[] = [];
      for (const [method, path, json] of attemptsOnY()) {
        const res = await b.api(method, path, { token, json });
        if (res.status !== 403 && res.status !== 404) leaks.push(`${method} ${path} → ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
        else expect(res.body?.error?.code, `${method} ${path}`).toEqual(expect.any(String));
      }
      expect(leaks).toEqual([]);
      expect(await stateOfY()).toEqual(before);
    }, 30_000);
  }

  it('a name is looked up in the caller’s organization: "Shared" is X’s own data source for X’s tokens', async () => {
    for (const token of [x.apiToken, x.studioToken]) {
      const got = await b.api('GET', '/v1/data-sources/Shared', { token });
      expect(got.status).toBe(200);
      expect(got.body.dataSource.id).toBe(dsX);
      const rows = await b.api('POST', '/v1/data-sources/Shared/data/query', { token, json: {} });
      expect(rows.body.entries.map((e: any) => e.data.owner)).toEqual(['x']);
    }
    const ofY = await b.api('GET', '/v1/data-sources/Shared', { token: y.apiToken });
    expect(ofY.body.dataSource.id).toBe(Y.ds);
  });

  it('naming another organization (?organizationId=) finds only what the caller may see: 404, not 403, for the rest', async () => {
    for (const token of [x.apiToken, x.studioToken]) {
      const hidden = await b.api('GET', `/v1/data-sources/Shared?organizationId=${y.organizationId}`, { token });
      expect(hidden.status).toBe(404);
      expect(hidden.body.error.code).toBe('DATA_SOURCE_NOT_FOUND');
      const missing = await b.api('GET', `/v1/data-sources/NoSuchName?organizationId=${y.organizationId}`, { token });
      expect(missing.status).toBe(404);
      expect(missing.body.error.code).toBe(hidden.body.error.code);
    }
    // A data source Y opens to everyone (rule `all` for select) is readable by name from X, and only readable.
    const open = (
      await ok(
        b.api('POST', `/v1/data-sources?organizationId=${y.organizationId}`, {
          token: y.studioToken,
          json: { name: 'Catalogue', accessRules: [{ type: ['select'], allow: 'all' }] },
        }),
        201,
      )
    ).dataSource.id;
    await ok(b.api('PUT', `/v1/data-sources/${open}/data`, { token: y.studioToken, json: { item: 'pen' } }), 201);
    const read = await b.api('POST', `/v1/data-sources/Catalogue/data/query?organizationId=${y.organizationId}`, { token: x.apiToken, json: {} });
    expect(read.status).toBe(200);
    expect(read.body.entries.map((e: any) => e.data)).toEqual([{ item: 'pen' }]);
    const write = await b.api('PUT', `/v1/data-sources/Catalogue/data?organizationId=${y.organizationId}`, { token: x.apiToken, json: { item: 'x' } });
    expect(write.status).toBe(403);
    // Without a token, a private data source and a missing one get the same 401, naming only what was sent.
    const anonymous = await b.api('GET', `/v1/data-sources/Shared?organizationId=${y.organizationId}`, { token: null });
    expect(anonymous.status).toBe(401);
    const anonymousMissing = await b.api('GET', `/v1/data-sources/NoSuchName?organizationId=${y.organizationId}`, { token: null });
    expect(anonymousMissing.body.error.code).toBe(anonymous.body.error.code);
    expect(anonymousMissing.body.error.message.replace('NoSuchName', 'Shared')).toBe(anonymous.body.error.message);
  });

  it('another organization’s data source cannot be joined, nor its entries, files or versions reached through X’s data source', async () => {
    const q = (json: unknown) => b.api('POST', `/v1/data-sources/${dsX}/data/query`, { json });
    const byId = await q({ join: { Stolen: { dataSourceId: Y.ds } } });
    expect(byId.status).toBe(404);
    const byName = await q({ join: { Stolen: { dataSourceName: 'OrgWide' } } });
    expect(byName.status).toBe(404);
    expect((await b.api('GET', `/v1/data-sources/${dsX}/data/${Y.entry}`)).status).toBe(404);
    expect((await b.api('PUT', `/v1/data-sources/${dsX}/data/${Y.entry}`, { json: { owner: 'x' } })).status).toBe(404);
    expect((await b.api('DELETE', `/v1/data-sources/${dsX}/data/${Y.entry}`)).status).toBe(404);
    expect((await b.api('GET', `/v1/data-sources/${dsX}/files/${Y.file}`)).status).toBe(404);
    expect((await b.api('GET', `/v1/data-sources/${dsX}/versions/${Y.version}/data`)).status).toBe(404);
    expect((await b.api('POST', `/v1/data-sources/${dsX}/versions/${Y.version}/restore`)).status).toBe(404);
    const commit = await b.api('POST', `/v1/data-sources/${dsX}/commit`, { json: { entries: [{ id: Y.entry, data: { owner: 'x' } }], append: true } });
    // A commit converges (docs/data-sources.md): the unknown id is reported as not found in X's data source, nothing of Y's is touched.
    expect(commit.status).toBe(200);
    expect(commit.body.errors).toEqual([expect.objectContaining({ index: 0, id: Y.entry, code: 'ENTRY_NOT_FOUND' })]);
    expect(JSON.stringify(commit.body)).not.toContain('with file');
    const y1 = await b.api('GET', `/v1/data-sources/${Y.ds}/data/${Y.entry}`, { token: y.apiToken });
    expect(y1.body.data.title).toBe('with file');
  });

  it('ids of Y’s notifications, actions, screens, subscriptions and tokens are unknown inside X’s app', async () => {
    const a = `/v1/apps/${x.appId}`;
    const studio = { token: x.studioToken };
    expect((await b.api('PUT', `${a}/notifications/${Y.notification}`, { json: { data: { t: 1 } } })).status).toBe(404);
    expect((await b.api('DELETE', `${a}/notifications/${Y.notification}`)).status).toBe(404);
    expect((await b.api('GET', `${a}/notifications/${Y.notification}/deliveries`, studio)).status).toBe(404);
    const marked = await b.api('POST', `${a}/notifications/mark-as-read`, { json: { recipientId: GUID, entries: [Y.notification] } });
    expect(marked.status).toBe(404);
    expect(marked.body.error.code).toBe('NOTIFICATION_NOT_FOUND');
    const withSub = await b.api('PUT', `${a}/notifications`, {
      json: { data: {}, pushNotification: { payload: { title: 't', body: 'b' }, subscriptions: [Y.subscription] } },
    });
    expect(withSub.status).toBe(400);
    for (const [method, path] of [
      ['GET', `${a}/tasks/${Y.action}`],
      ['PUT', `${a}/tasks/${Y.action}`],
      ['DELETE', `${a}/tasks/${Y.action}`],
      ['POST', `${a}/tasks/${Y.action}/run`],
      ['GET', `${a}/tasks/${Y.action}/compile?html`],
      ['GET', `${a}/pages/${Y.page}`],
      ['DELETE', `${a}/pages/${Y.page}`],
    ] as const)
      expect((await b.api(method, path, { json: method === 'PUT' ? { name: 'renamed' } : method === 'POST' ? {} : undefined })).status, path).toBe(404);
    expect((await b.api('DELETE', `${a}/tokens/${Y.apiTokenId}`, studio)).status).toBe(404);
    const onPage = await b.api('POST', `${a}/tasks`, { json: { name: 'on-y-page', environment: 'server', pageId: Y.page, functions: [] } });
    expect(onPage.status).toBe(422);
    const upload = await b.api('POST', `${a}/tasks/logs`, {
      json: {
        logs: [
          {
            deviceKey: 'cross-tenant-1',
            type: 'app.action.completed',
            createdAt: new Date().toISOString(),
            data: { mode: 'on-demand', duration: 1, actionId: Y.action },
          },
        ],
      },
    });
    expect(upload.status).toBe(422);
    expect((await b.api('GET', `/v1/apps/${y.appId}/tokens`, { token: y.studioToken })).body.tokens.map((t: any) => t.id)).toContain(Y.apiTokenId);
  });

  it('a server run of X cannot read or write Y’s data sources (by id; by name it finds X’s own)', async () => {
    const a = `/v1/apps/${x.appId}`;
    const make = async (name: string, functions: unknown[]) => {
      const id = (await ok(b.api('POST', `${a}/tasks`, { json: { name, environment: 'server', functions } }), 201)).action.id;
      await ok(b.api('POST', `${a}/tasks/${id}/publish`, { json: { publish: true } }));
      return b.api('POST', `${a}/tasks/${id}/run`, { json: { wait: true } });
    };
    const read = await make('read-y', [fn('read-datasource', { dataSourceId: Y.ds }), fn('return', { value: '{{ records }}' })]);
    expect(read.status).toBe(422);
    expect(JSON.stringify(read.body)).not.toContain('s1');
    const write = await make('write-y', [fn('insert-entry', { dataSourceId: Y.orgDs, data: { planted: true } })]);
    expect(write.status).toBe(422);
    const byName = await make('read-shared', [fn('read-datasource', { dataSourceName: 'Shared' }), fn('return', { value: '{{ records }}' })]);
    expect(byName.status).toBe(200);
    expect(JSON.stringify(byName.body.result)).not.toContain('"y"');
    const rows = await b.api('POST', `/v1/data-sources/${Y.orgDs}/data/query`, { token: y.studioToken, json: {} });
    expect(rows.body.entries.map((e: any) => e.data)).toEqual([{ owner: 'y-org' }]);
  }, 30_000);
});

describe('isolation between apps of one organization', () => {
  it('an API token of app A2 cannot reach app A’s app-owned things', async () => {
    const a = `/v1/apps/${x.appId}`;
    const token = otherAppX.token;
    const action = (await ok(b.api('POST', `${a}/tasks`, { json: { name: 'a-only', functions: [] } }), 201)).action.id;
    const page = (await ok(b.api('POST', `${a}/pages`, { json: { name: 'A page' } }), 201)).page.id;
    const n = (await ok(b.api('PUT', `${a}/notifications`, { json: { data: {} } }), 201)).notification.id;
    for (const [method, path, json] of [
      ['GET', a],
      ['GET', `${a}/tasks`],
      ['PUT', `${a}/tasks/${action}`, { name: 'x' }],
      ['DELETE', `${a}/tasks/${action}`],
      ['GET', `${a}/tasks/logs`],
      ['GET', `${a}/pages/${page}`],
      ['PUT', `${a}/notifications/${n}`, { data: {} }],
      ['GET', `${a}/notifications`],
      ['POST', `${a}/analytics`, { events: [{ type: 'analytics.pageView', data: {} }] }],
      ['GET', `${a}/tasks/functions`],
      ['GET', `/v1/data-sources/${dsX}`],
      ['POST', `/v1/data-sources/${dsX}/data/query`, {}],
      ['PUT', `/v1/data-sources/${dsX}/data`, { planted: true }],
      ['DELETE', `/v1/data-sources/${dsX}`],
      ['GET', `/v1/data-sources?appId=${x.appId}`],
    ] as [string, string, unknown?][]) {
      const res = await b.api(method, path, { token, json });
      expect([403, 404], `${method} ${path} → ${res.status}`).toContain(res.status);
    }
    // Its own organization's shared data source is fine, and so is its own app.
    expect((await b.api('GET', `/v1/apps/${otherAppX.appId}`, { token })).status).toBe(200);
  });
});
