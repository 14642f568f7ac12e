import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../../src/server/db/migrate.js';
import { migrations } from '../../src/server/db/migrations/index.js';
import { openStore } from '../../src/server/db/open.js';
import { startServer, type Bootstrap } from '../../src/server/index.js';
import { createApp, createOrganization, createToken, setSetting } from '../../src/server/store/identity.js';
import { createTestDatabase } from '../helpers/postgres.js';
import { startTestBackend, testEngine, type TestBackend } from '../helpers/server.js';

/**
 * The authorization matrix: ONE list of every REST route (with real ids), each tried with every kind of
 * caller. A refusal is a JSON `{ error: { code, message } }` and changes nothing. The list must cover every
 * route of the OpenAPI document (so a new route without a row fails here), and agree with the token kinds the
 * document states for each route (`x-token-kinds`).
 */

type Kind = 'none' | 'unknown' | 'client' | 'api' | 'studio' | 'foreign';
/** Expected status class: `2xx`, `401`, `403`, `404`, or `denied` (403 or 404: another tenant). */
type Outcome = '2xx' | '401' | '403' | '404' | 'denied';

const KINDS: readonly Kind[] = ['none', 'unknown', 'foreign', 'client', 'api', 'studio'];
const GUID = '3f8e1c2a-8b4d-4c6e-9f10-2a3b4c5d6e7f';
const RUN_KEY = 'matrix-run-key-0001';

interface Row {
  /** The route, as in the OpenAPI document (`METHOD /path` with `:params`). */
  route: string;
  /** A second row of a route that checks one more case (not compared with `x-token-kinds`). */
  variant?: string;
  /** What each kind gets; see `expected()` for the defaults. */
  expect?: Partial<Record<Kind, Outcome>>;
  /** Client tokens are allowed (default: refused with 403 CLIENT_TOKEN_FORBIDDEN). */
  client?: boolean;
  /** Only studio tokens are allowed (API tokens: 403 STUDIO_ONLY). */
  studio?: boolean;
  /** Prepares what one attempt consumes (a fresh thing to delete…); its result goes to `path` and `json`. */
  fresh?: () => Promise<number>;
  path: (id: number, kind: Kind) => string;
  json?: (id: number, kind: Kind) => unknown;
  /** A multipart body instead of JSON. */
  form?: (id: number, kind: Kind) => FormData;
  /** Extra request headers. */
  headers?: Record<string, string>;
}

let b: TestBackend;
let x: Bootstrap;
let foreign: Bootstrap;
const ids = {} as {
  ds: number;
  vds: number;
  entry: number;
  file: number;
  version: number;
  notification: number;
  action: number;
  page: number;
  mediaFile: number;
  run: number;
};

async function ok(res: Promise<{ status: number; body: any }>): Promise<any> {
  const r = await res;
  if (r.status >= 300) throw new Error(`setup request failed: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

const st = () => ({ token: x.studioToken });
const a = () => `/v1/apps/${x.appId}`;
const tasks = () => `${a()}/tasks`;
const dsPath = () => `/v1/data-sources/${ids.ds}`;
const returnFn = (value: unknown) => [{ functionPackage: 'com.client.function.return', settings: { value } }];

const newEntry = async () => (await ok(b.api('PUT', `${dsPath()}/data`, { json: { fresh: true } }))).id as number;
const newAction = async () =>
  (await ok(b.api('POST', tasks(), { json: { name: `fresh-${Math.random().toString(36).slice(2, 10)}`, environment: 'server', functions: returnFn(1) } })))
    .action.id as number;
const newNotification = async () => (await ok(b.api('PUT', `${a()}/notifications`, { json: { data: { title: 'fresh' } } }))).notification.id as number;
const newPage = async () => (await ok(b.api('POST', `${a()}/pages`, { json: { name: 'fresh' } }))).page.id as number;
const newToken = async () => (await ok(b.api('POST', `${a()}/tokens`, { ...st(), json: { name: 'fresh' } }))).token.id as number;
const newDataSource = async () =>
  (await ok(b.api('POST', `/v1/data-sources?appId=${x.appId}`, { json: { name: `fresh-${Math.random().toString(36).slice(2, 10)}` } }))).dataSource
    .id as number;
const mediaForm = (kind: Kind) => {
  const form = new FormData();
  form.append('files[0]', new Blob([`by ${kind}`], { type: 'text/plain' }), `${kind}.txt`);
  return form;
};
const newMediaFile = async () => {
  const res = await fetch(`${b.url}/v1/media/files`, { method: 'POST', headers: { 'Auth-token': x.apiToken }, body: mediaForm('api') });
  if (res.status !== 201) throw new Error(`setup upload failed: ${res.status}`);
  return ((await res.json()) as { files: { id: number }[] }).files[0]!.id;
};
const newMediaFolder = async () => (await ok(b.api('POST', '/v1/media/folders', { json: { name: 'fresh' } }))).id as number;
/** One request of a row: JSON through `b.api`, or a multipart body. */
async function send(row: Row, method: string, id: number, kind: Kind): Promise<{ status: number; body: any }> {
  if (!row.form) return b.api(method, row.path(id, kind), { token: tokenOf(kind), json: row.json?.(id, kind), headers: row.headers });
  const token = tokenOf(kind);
  const res = await fetch(b.url + row.path(id, kind), { method, headers: token ? { 'Auth-token': token } : {}, body: row.form(id, kind) });
  return { status: res.status, body: await res.json() };
}
const deviceLog = (kind: Kind) => ({
  logs: [
    {
      deviceKey: `matrix-${kind}-0001`,
      type: 'app.action.completed',
      createdAt: new Date().toISOString(),
      data: { mode: 'on-demand', duration: 3, actionId: ids.action, result: 1 },
    },
  ],
});

/** Every route. Defaults: no token or an unknown one 401, another organization's API token 403/404, client 403, API and studio 2xx. */
const ROWS: Row[] = [
  { route: 'GET /openapi.json', path: () => '/openapi.json', client: true, expect: { none: '2xx', unknown: '2xx', foreign: '2xx' } },

  // Identity: every API or studio token sees its own user and organization (another tenant's token: its own, 2xx).
  { route: 'GET /v1/user', path: () => '/v1/user', expect: { foreign: '2xx' } },
  { route: 'GET /v1/organizations', path: () => '/v1/organizations', expect: { foreign: '2xx' } },

  // Apps, organizations, tokens
  { route: 'GET /v1/apps/:appId', path: () => a(), client: true },
  { route: 'PUT /v1/apps/:appId', path: () => a(), json: () => ({ name: 'Demo app' }), studio: true },
  { route: 'GET /v1/apps/:appId/tokens', path: () => `${a()}/tokens`, studio: true },
  { route: 'POST /v1/apps/:appId/tokens', path: () => `${a()}/tokens`, json: (_, kind) => ({ name: `by ${kind}` }), studio: true },
  { route: 'DELETE /v1/apps/:appId/tokens/:tokenId', fresh: newToken, path: (id) => `${a()}/tokens/${id}`, studio: true },
  { route: 'GET /v1/organizations/:organizationId', path: () => `/v1/organizations/${x.organizationId}`, studio: true },
  { route: 'PUT /v1/organizations/:organizationId', path: () => `/v1/organizations/${x.organizationId}`, json: () => ({ encryption: false }), studio: true },
  {
    route: 'POST /v1/organizations/:organizationId/apps',
    path: () => `/v1/organizations/${x.organizationId}/apps`,
    json: (_, kind) => ({ name: `app by ${kind}` }),
    studio: true,
  },

  // Data sources: client tokens use entries like the app's API token; administration and history are refused.
  { route: 'GET /v1/data-sources', path: () => `/v1/data-sources?appId=${x.appId}`, client: true },
  { route: 'GET /v1/data-sources', variant: "the token's organization", path: () => '/v1/data-sources?type=matrix', client: true, expect: { foreign: '2xx' } },
  { route: 'POST /v1/data-sources', path: () => `/v1/data-sources?appId=${x.appId}`, json: (_, kind) => ({ name: `Created by ${kind}` }) },
  { route: 'GET /v1/data-sources/:ds', path: () => dsPath(), client: true },
  { route: 'PUT /v1/data-sources/:ds', path: () => dsPath(), json: () => ({ type: 'matrix' }) },
  { route: 'PUT /v1/data-sources/:ds', variant: 'access rules', path: () => dsPath(), json: () => ({ accessRules: [] }), studio: true },
  { route: 'DELETE /v1/data-sources/:ds', fresh: newDataSource, path: (id) => `/v1/data-sources/${id}` },
  { route: 'POST /v1/data-sources/:ds/data', path: () => `${dsPath()}/data`, json: (_, kind) => ({ entries: [{ imported: kind }], append: true }) },
  {
    route: 'POST /v1/data-sources/:ds/data',
    variant: 'truncate',
    fresh: newDataSource,
    path: (id) => `/v1/data-sources/${id}/data`,
    json: () => ({ entries: [] }),
  },
  { route: 'GET /v1/data-sources/:ds/data', path: () => `${dsPath()}/data`, client: true },
  { route: 'PUT /v1/data-sources/:ds/data', path: () => `${dsPath()}/data`, json: (_, kind) => ({ insertedBy: kind }), client: true },
  { route: 'POST /v1/data-sources/:ds/data/query', path: () => `${dsPath()}/data/query`, json: () => ({}), client: true },
  {
    route: 'POST /v1/data-sources/:ds/data/query',
    variant: 'delete query',
    fresh: newEntry,
    path: () => `${dsPath()}/data/query`,
    json: (id) => ({ type: 'delete', where: { $id: id } }),
  },
  { route: 'GET /v1/data-sources/:ds/data/:entryId', path: () => `${dsPath()}/data/${ids.entry}`, client: true },
  { route: 'PUT /v1/data-sources/:ds/data/:entryId', path: () => `${dsPath()}/data/${ids.entry}`, json: (_, kind) => ({ updatedBy: kind }), client: true },
  { route: 'DELETE /v1/data-sources/:ds/data/:entryId', fresh: newEntry, path: (id) => `${dsPath()}/data/${id}`, client: true },
  { route: 'GET /v1/data-sources/:ds/indexes/:indexes', path: () => `${dsPath()}/indexes/a`, client: true },
  {
    route: 'POST /v1/data-sources/:ds/commit',
    path: () => `${dsPath()}/commit`,
    json: (_, kind) => ({ entries: [{ data: { committedBy: kind } }], append: true, returnEntries: false }),
    client: true,
  },
  {
    route: 'POST /v1/data-sources/:ds/commit',
    variant: 'replace (no append)',
    fresh: newDataSource,
    path: (id) => `/v1/data-sources/${id}/commit`,
    json: () => ({ entries: [] }),
  },
  { route: 'GET /v1/data-sources/:ds/versions', path: () => `/v1/data-sources/${ids.vds}/versions` },
  { route: 'GET /v1/data-sources/:ds/versions/:versionId/data', path: () => `/v1/data-sources/${ids.vds}/versions/${ids.version}/data` },
  { route: 'POST /v1/data-sources/:ds/versions/:versionId/data', path: () => `/v1/data-sources/${ids.vds}/versions/${ids.version}/data`, json: () => ({}) },
  { route: 'POST /v1/data-sources/:ds/versions/:versionId/restore', path: () => `/v1/data-sources/${ids.vds}/versions/${ids.version}/restore` },
  { route: 'GET /v1/data-sources/:ds/files/:fileId', path: () => `${dsPath()}/files/${ids.file}`, client: true },
  { route: 'GET /v1/data-sources/:ds/logs', path: () => `${dsPath()}/logs`, studio: true },

  // Media library: a page downloads files; everything else is for API and studio tokens (another tenant's: its own root).
  { route: 'GET /v1/media', path: () => '/v1/media', expect: { foreign: '2xx' } },
  { route: 'POST /v1/media/folders', path: () => '/v1/media/folders', json: (_, kind) => ({ name: `by ${kind}` }), expect: { foreign: '2xx' } },
  { route: 'DELETE /v1/media/folders/:folderId', fresh: newMediaFolder, path: (id) => `/v1/media/folders/${id}` },
  { route: 'POST /v1/media/files', path: () => '/v1/media/files', form: (_, kind) => mediaForm(kind), expect: { foreign: '2xx' } },
  { route: 'GET /v1/media/files/:fileId/contents', path: () => `/v1/media/files/${ids.mediaFile}/contents`, client: true },
  { route: 'DELETE /v1/media/files/:fileId', fresh: newMediaFile, path: (id) => `/v1/media/files/${id}` },

  // Notifications: a client token reads (published ones) and marks read; never writes notifications.
  { route: 'GET /v1/apps/:appId/notifications', path: () => `${a()}/notifications`, client: true },
  {
    route: 'POST /v1/apps/:appId/notifications',
    path: () => `${a()}/notifications`,
    json: () => ({ count: true, recipientId: GUID, unread: true }),
    client: true,
  },
  {
    route: 'PUT /v1/apps/:appId/notifications',
    path: () => `${a()}/notifications`,
    json: (_, kind) => ({ data: { title: `by ${kind}` }, status: 'published' }),
  },
  {
    route: 'POST /v1/apps/:appId/notifications/batch',
    path: () => `${a()}/notifications/batch`,
    json: (_, kind) => ({ notifications: [{ data: { title: `batch by ${kind}` } }] }),
  },
  {
    route: 'POST /v1/apps/:appId/notifications/mark-as-read',
    path: () => `${a()}/notifications/mark-as-read`,
    json: () => ({ recipientId: GUID, entries: [ids.notification] }),
    client: true,
  },
  {
    route: 'PUT /v1/apps/:appId/notifications/:notificationId',
    path: () => `${a()}/notifications/${ids.notification}`,
    json: () => ({ data: { title: 'Hello' } }),
  },
  { route: 'DELETE /v1/apps/:appId/notifications/:notificationId', fresh: newNotification, path: (id) => `${a()}/notifications/${id}` },
  { route: 'GET /v1/apps/:appId/notifications/:notificationId/deliveries', path: () => `${a()}/notifications/${ids.notification}/deliveries`, studio: true },
  {
    route: 'POST /v1/apps/:appId/subscriptions',
    path: () => `${a()}/subscriptions`,
    json: (_, kind) => ({ token: `push-${kind}`, uuid: GUID, device: 'matrix', platform: 'web' }),
    client: true,
  },
  { route: 'GET /v1/apps/:appId/subscriptions', path: () => `${a()}/subscriptions`, studio: true },
  { route: 'GET /v1/apps/:appId/subscriptions/public-key', path: () => `${a()}/subscriptions/public-key`, client: true },

  // Actions: a client token reads and runs the published (live) copies and uploads device logs.
  { route: 'GET /v1/apps/:appId/tasks', path: () => tasks(), client: true },
  { route: 'GET /v1/apps/:appId/tasks', variant: 'live', path: () => `${tasks()}?environment=live`, client: true },
  { route: 'GET /v1/apps/:appId/tasks', variant: 'viewer', path: () => `${tasks()}?environment=viewer` },
  {
    route: 'POST /v1/apps/:appId/tasks',
    path: () => tasks(),
    json: (_, kind) => ({ name: `created-by-${kind}`, environment: 'server', functions: returnFn(2) }),
  },
  { route: 'GET /v1/apps/:appId/tasks/logs', path: () => `${tasks()}/logs` },
  { route: 'POST /v1/apps/:appId/tasks/logs', path: () => `${tasks()}/logs`, json: (_, kind) => deviceLog(kind), client: true },
  { route: 'POST /v1/apps/:appId/tasks/logs', variant: 'reading', path: () => `${tasks()}/logs`, json: () => ({ limit: 5 }) },
  { route: 'GET /v1/apps/:appId/tasks/functions', path: () => `${tasks()}/functions`, client: true },
  // A run: a client token reads a server run only with the Idempotency-Key it was queued with (else 404, like a missing run).
  { route: 'GET /v1/apps/:appId/tasks/runs', path: () => `${tasks()}/runs`, headers: { 'Idempotency-Key': RUN_KEY }, client: true },
  { route: 'GET /v1/apps/:appId/tasks/runs/:runId', path: () => `${tasks()}/runs/${ids.run}`, headers: { 'Idempotency-Key': RUN_KEY }, client: true },
  { route: 'GET /v1/apps/:appId/tasks/runs/:runId', variant: 'without key', path: () => `${tasks()}/runs/${ids.run}`, client: true, expect: { client: '404' } },
  {
    route: 'POST /v1/apps/:appId/tasks/functions',
    path: () => `${tasks()}/functions`,
    json: (_, kind) => ({ package: `com.matrix.function.by-${kind}`, code: '() => ({})' }),
    studio: true,
  },
  { route: 'GET /v1/apps/:appId/tasks/:idOrName', path: () => `${tasks()}/${ids.action}`, client: true },
  { route: 'GET /v1/apps/:appId/tasks/:idOrName', variant: 'viewer', path: () => `${tasks()}/${ids.action}?environment=viewer` },
  { route: 'PUT /v1/apps/:appId/tasks/:idOrName', path: () => `${tasks()}/${ids.action}`, json: () => ({ timezone: 'UTC' }) },
  { route: 'DELETE /v1/apps/:appId/tasks/:idOrName', fresh: newAction, path: (id) => `${tasks()}/${id}` },
  { route: 'POST /v1/apps/:appId/tasks/:id/publish', path: () => `${tasks()}/${ids.action}/publish`, json: () => ({ publish: true }) },
  { route: 'POST /v1/apps/:appId/tasks/:idOrName/run', path: () => `${tasks()}/${ids.action}/run`, json: () => ({ payload: {}, wait: true }), client: true },
  {
    route: 'POST /v1/apps/:appId/tasks/:idOrName/run',
    variant: 'viewer',
    path: () => `${tasks()}/${ids.action}/run`,
    json: () => ({ payload: {}, wait: true, environment: 'viewer' }),
  },
  { route: 'GET /v1/apps/:appId/tasks/:id/compile', path: () => `${tasks()}/${ids.action}/compile?html` },
  { route: 'GET /v1/apps/:appId/pages', path: () => `${a()}/pages` },
  { route: 'POST /v1/apps/:appId/pages', path: () => `${a()}/pages`, json: (_, kind) => ({ name: `page by ${kind}` }) },
  { route: 'GET /v1/apps/:appId/pages/:pageId', path: () => `${a()}/pages/${ids.page}` },
  { route: 'PUT /v1/apps/:appId/pages/:pageId', path: () => `${a()}/pages/${ids.page}`, json: () => ({ script: '/* v2 */' }) },
  { route: 'DELETE /v1/apps/:appId/pages/:pageId', fresh: newPage, path: (id) => `${a()}/pages/${id}` },
  { route: 'POST /v1/apps/:appId/pages/:pageId/publish', path: () => `${a()}/pages/${ids.page}/publish`, json: () => ({ publish: true }) },

  // Analytics: a page records events; reading them (every user's) is not for it.
  {
    route: 'POST /v1/apps/:appId/analytics',
    path: () => `${a()}/analytics`,
    json: () => ({ events: [{ type: 'analytics.event', data: { category: 'matrix', action: 'try' } }] }),
    client: true,
  },
  { route: 'GET /v1/apps/:appId/analytics', path: () => `${a()}/analytics` },
];

function expected(row: Row, kind: Kind): Outcome {
  const given = row.expect?.[kind];
  if (given) return given;
  switch (kind) {
    case 'none':
    case 'unknown':
      return '401';
    case 'foreign':
      return 'denied';
    case 'client':
      return row.client && !row.studio ? '2xx' : '403';
    case 'api':
      return row.studio ? '403' : '2xx';
    case 'studio':
      return '2xx';
  }
}

function tokenOf(kind: Kind): string | null {
  switch (kind) {
    case 'none':
      return null;
    case 'unknown':
      return 'iar_client_unknown0000000000000000000000000000';
    case 'client':
      return x.clientToken;
    case 'api':
      return x.apiToken;
    case 'studio':
      return x.studioToken;
    case 'foreign':
      return foreign.apiToken;
  }
}

const matches = (status: number, outcome: Outcome) =>
  outcome === '2xx' ? status >= 200 && status < 300 : outcome === 'denied' ? status === 403 || status === 404 : status === Number(outcome);

/** What the organization holds (read with its studio token), compared before and after refused requests. */
async function state() {
  const t = st();
  const get = async (path: string) => (await b.api('GET', path, t)).body;
  const post = async (path: string, json: unknown) => (await b.api('POST', path, { ...t, json })).body;
  const [
    app,
    org,
    tokens,
    dataSources,
    ds,
    entries,
    versions,
    vdsEntries,
    notifications,
    subscriptions,
    actions,
    logs,
    pages,
    functions,
    analytics,
    orgDataSources,
    media,
  ] = await Promise.all([
    get(a()),
    get(`/v1/organizations/${x.organizationId}`),
    get(`${a()}/tokens`),
    get(`/v1/data-sources?appId=${x.appId}`),
    get(dsPath()),
    post(`${dsPath()}/data/query`, {}),
    get(`/v1/data-sources/${ids.vds}/versions`),
    post(`/v1/data-sources/${ids.vds}/data/query`, {}),
    get(`${a()}/notifications?includeDeleted=true`),
    get(`${a()}/subscriptions`),
    get(tasks()),
    post(`${tasks()}/logs`, { limit: 1000 }),
    get(`${a()}/pages`),
    get(`${tasks()}/functions`),
    get(`${a()}/analytics?limit=1000`),
    get(`/v1/data-sources?organizationId=${x.organizationId}`),
    get('/v1/media'),
  ]);
  return {
    app,
    org,
    tokens,
    dataSources,
    ds,
    entries,
    versions,
    vdsEntries,
    notifications,
    subscriptions,
    actions,
    logs,
    pages,
    functions,
    analytics,
    orgDataSources,
    media,
  };
}

beforeAll(async () => {
  b = await startTestBackend({ limits: { runTimeoutMs: 5000, runsPerMinute: 10_000 } });
  x = b.server.bootstrap;
  foreign = await b.server.createOrganization('Foreign');

  ids.ds = (await ok(b.api('POST', `/v1/data-sources?appId=${x.appId}`, { json: { name: 'Matrix' } }))).dataSource.id;
  ids.entry = (await ok(b.api('PUT', `${dsPath()}/data`, { json: { a: 1 } }))).id;
  const form = new FormData();
  form.append('a', '2');
  form.append('doc', new Blob(['hello'], { type: 'text/plain' }), 'hello.txt');
  const uploaded = await fetch(`${b.url}${dsPath()}/data`, { method: 'PUT', headers: { 'Auth-token': x.apiToken }, body: form });
  const entry = (await uploaded.json()) as { data: Record<string, unknown> };
  const link = JSON.stringify(entry.data).match(/files\/(\d+)/);
  if (!link) throw new Error(`no file link in ${JSON.stringify(entry)}`);
  ids.file = Number(link[1]);

  ids.vds = (await ok(b.api('POST', `/v1/data-sources?appId=${x.appId}`, { json: { name: 'Versioned' } }))).dataSource.id;
  await ok(b.api('POST', `/v1/data-sources/${ids.vds}/data`, { json: { entries: [{ v: 1 }] } }));
  await ok(b.api('POST', `/v1/data-sources/${ids.vds}/data`, { json: { entries: [{ v: 2 }] } }));
  ids.version = (await ok(b.api('GET', `/v1/data-sources/${ids.vds}/versions`))).versions[0].id;

  ids.notification = (await ok(b.api('PUT', `${a()}/notifications`, { json: { data: { title: 'Hello' }, status: 'published' } }))).notification.id;
  ids.action = (await ok(b.api('POST', tasks(), { json: { name: 'matrix-action', environment: 'server', functions: returnFn(42) } }))).action.id;
  await ok(b.api('POST', `${tasks()}/${ids.action}/publish`, { json: { publish: true } }));
  ids.run = (await ok(b.api('POST', `${tasks()}/${ids.action}/run`, { json: {}, headers: { 'Idempotency-Key': RUN_KEY } }))).runId;
  // Finished before the rows compare states (its log and the action's lastRunAt would change them meanwhile).
  for (let i = 0; (await ok(b.api('GET', `${tasks()}/runs/${ids.run}`))).run.status !== 'completed'; i++) {
    if (i > 400) throw new Error('setup run did not finish');
    await new Promise((r) => setTimeout(r, 25));
  }
  ids.page = (await ok(b.api('POST', `${a()}/pages`, { json: { name: 'Screen' } }))).page.id;
  ids.mediaFile = await newMediaFile();
}, 60_000);

afterAll(async () => {
  await b?.close();
});

describe('authorization matrix', () => {
  it('covers every route of the OpenAPI document, with the token kinds it states', async () => {
    const doc = (await b.api('GET', '/openapi.json', { token: null })).body as {
      paths: Record<string, Record<string, { 'x-token-kinds'?: string[] }>>;
    };
    const documented = new Map<string, string[] | undefined>();
    for (const [path, operations] of Object.entries(doc.paths))
      for (const [method, operation] of Object.entries(operations))
        documented.set(`${method.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ':$1')}`, operation['x-token-kinds']);
    const rows = new Set(ROWS.map((r) => r.route));
    expect(
      [...documented.keys()].filter((route) => !rows.has(route)),
      'routes without a matrix row',
    ).toEqual([]);
    expect(
      [...rows].filter((route) => !documented.has(route)),
      'matrix rows of routes that do not exist',
    ).toEqual([]);
    for (const row of ROWS) {
      if (row.variant || !row.route.includes(' /v1/')) continue;
      const kinds = (['client', 'api', 'studio'] as const).filter((kind) => expected(row, kind) === '2xx');
      expect(documented.get(row.route), row.route).toEqual(kinds);
    }
  });

  for (const row of ROWS) {
    const name = row.variant ? `${row.route} (${row.variant})` : row.route;
    it(name, async () => {
      const [method] = row.route.split(' ') as [string];
      const attempt = async (kind: Kind) => {
        const id = row.fresh ? await row.fresh() : 0;
        const res = await send(row, method, id, kind);
        return { kind, res, outcome: expected(row, kind) };
      };
      const refused = KINDS.filter((kind) => expected(row, kind) !== '2xx');
      const allowed = KINDS.filter((kind) => expected(row, kind) === '2xx');

      // Refusals first: each is JSON with a code and a message, and nothing changed.
      const fresh = row.fresh ? await row.fresh() : 0;
      const before = await state();
      for (const kind of refused) {
        const res = await send(row, method, fresh, kind);
        const outcome = expected(row, kind);
        expect(matches(res.status, outcome), `${name} as ${kind}: expected ${outcome}, got ${res.status} ${JSON.stringify(res.body)}`).toBe(true);
        expect(res.body, `${name} as ${kind}`).toEqual({ error: { code: expect.any(String), message: expect.any(String) }, message: expect.any(String) });
        expect(res.body.message, `${name} as ${kind}: the top-level message repeats error.message`).toBe(res.body.error.message);
        if (kind === 'client' && outcome === '403') expect(res.body.error.code, `${name} as client`).toBe('CLIENT_TOKEN_FORBIDDEN');
        if (kind === 'api' && outcome === '403') expect(res.body.error.code, `${name} as api`).toBe('STUDIO_ONLY');
        if (kind === 'none') expect(res.body.error.code).toBe('MISSING_TOKEN');
        if (kind === 'unknown') expect(res.body.error.code).toBe('INVALID_TOKEN');
      }
      expect(await state(), `${name}: a refused request changed something`).toEqual(before);

      for (const kind of allowed) {
        const { res, outcome } = await attempt(kind);
        expect(matches(res.status, outcome), `${name} as ${kind}: expected ${outcome}, got ${res.status} ${JSON.stringify(res.body)}`).toBe(true);
      }
    });
  }
});

describe('what a client token sees', () => {
  it('a /v1 path missing from the route table is closed to client tokens (fail closed)', async () => {
    const res = await b.api('GET', `/v1/apps/${x.appId}/not-a-route`, { token: x.clientToken });
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('CLIENT_TOKEN_FORBIDDEN');
    expect((await b.api('GET', `/v1/apps/${x.appId}/not-a-route`, { token: x.apiToken })).status).toBe(404);
  });

  it('reads the live (published) copies of actions only', async () => {
    const draft = (await ok(b.api('POST', tasks(), { json: { name: 'unpublished-draft', environment: 'server', functions: returnFn(7) } }))).action;
    await ok(b.api('PUT', `${tasks()}/${ids.action}`, { json: { functions: returnFn('working copy') } }));
    const listed = (await ok(b.api('GET', tasks(), { token: x.clientToken }))).actions as { id: number; functions: unknown }[];
    expect(listed.map((action) => action.id)).not.toContain(draft.id);
    expect(listed.find((action) => action.id === ids.action)!.functions).toEqual(returnFn(42));
    const one = await b.api('GET', `${tasks()}/${draft.id}`, { token: x.clientToken });
    expect(one.status).toBe(422);
    expect(one.body.error.code).toBe('ACTION_NOT_PUBLISHED');
    const run = await b.api('POST', `${tasks()}/${ids.action}/run`, { token: x.clientToken, json: { wait: true } });
    expect(run.body.result).toBe(42);
  });

  it('sees data source web hooks without their secrets, like any non-manager', async () => {
    await ok(
      b.api('PUT', dsPath(), {
        json: {
          hooks: [{ type: 'web', runOn: ['insert'], payload: { url: 'https://user:pw@hooks.example/x?key=secret', headers: { Authorization: 'Bearer s' } } }],
        },
      }),
    );
    const seen = await ok(b.api('GET', dsPath(), { token: x.clientToken }));
    expect(JSON.stringify(seen)).not.toContain('secret');
    expect(JSON.stringify(seen)).not.toContain('Bearer s');
    await ok(b.api('PUT', dsPath(), { json: { hooks: [] } }));
  });

  it('gets what the app API token gets on entries under access rules (loggedIn, token lists)', async () => {
    const tokens = (await ok(b.api('GET', `${a()}/tokens`, st()))).tokens as { id: number; kind: string; name: string }[];
    const client = tokens.find((t) => t.kind === 'client')!;
    expect(client.name).toBe('Default client token');
    const ruled = (await ok(b.api('POST', `/v1/data-sources?appId=${x.appId}`, { json: { name: 'Ruled' } }))).dataSource.id;
    const api = tokens.find((t) => t.kind === 'api')!;
    await ok(b.api('PUT', `/v1/data-sources/${ruled}`, { ...st(), json: { accessRules: [{ type: ['select', 'insert'], allow: { tokens: [api.id] } }] } }));
    const denied = await b.api('PUT', `/v1/data-sources/${ruled}/data`, { token: x.clientToken, json: { a: 1 } });
    // No right at all under the rules: the data source is not visible, as if missing (issue 15, no probing).
    expect(denied.status).toBe(404);
    expect(denied.body.error.code).toBe('DATA_SOURCE_NOT_FOUND');
    await ok(b.api('PUT', `/v1/data-sources/${ruled}`, { ...st(), json: { accessRules: [{ type: ['select', 'insert'], allow: { tokens: [client.id] } }] } }));
    expect((await b.api('PUT', `/v1/data-sources/${ruled}/data`, { token: x.clientToken, json: { a: 1 } })).status).toBe(201);
    expect((await b.api('PUT', `/v1/data-sources/${ruled}/data`, { json: { a: 1 } })).status).toBe(404);
  });

  it('the studio creates and revokes client tokens', async () => {
    const created = await ok(b.api('POST', `${a()}/tokens`, { ...st(), json: { kind: 'client', name: 'Landing page' } }));
    expect(created.token.token).toMatch(/^iar_client_/);
    expect(created.token.kind).toBe('client');
    expect((await b.api('GET', a(), { token: created.token.token })).status).toBe(200);
    expect((await b.api('POST', tasks(), { token: created.token.token, json: { name: 'nope', functions: returnFn(1) } })).status).toBe(403);
    await ok(b.api('DELETE', `${a()}/tokens/${created.token.id}`, st()));
    expect((await b.api('GET', a(), { token: created.token.token })).status).toBe(401);
    const bad = await b.api('POST', `${a()}/tokens`, { ...st(), json: { kind: 'studio' } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('INVALID_FIELD');
  });
});

describe('a database from before client tokens', () => {
  it('gets the client token kind and a bootstrap client token on the next start; old tokens keep working', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'iar-old-'));
    const database = testEngine === 'postgres' ? await createTestDatabase() : undefined;
    const where = { dataDir, databaseUrl: database?.url, port: 0, log: false };
    try {
      // The schema and bootstrap of the previous version: migrations up to 0006, no client token.
      const store = await openStore({ databaseUrl: database?.url, sqlite: { file: join(dataDir, 'runtime.sqlite') } });
      const now = new Date().toISOString();
      await migrate(
        store.db,
        migrations.slice(
          0,
          migrations.findIndex((m) => m.id === '0007_client_tokens'),
        ),
      );
      const organizationId = await createOrganization(store.db, 'Demo organization', now);
      const appId = await createApp(store.db, organizationId, 'Demo app', now);
      const api = await createToken(store.db, { kind: 'api', name: 'Default API token', organizationId, appId, now });
      const studio = await createToken(store.db, { kind: 'studio', name: 'Studio', organizationId, appId: null, now });
      await setSetting(store.db, 'bootstrap', JSON.stringify({ organizationId, appId, apiToken: api.token, studioToken: studio.token }));
      const refused = await store.db
        .run("INSERT INTO tokens (token, kind, name, organization_id, app_id, created_at) VALUES ('x', 'client', '', ?, ?, ?)", [organizationId, appId, now])
        .then(
          () => false,
          () => true,
        );
      expect(refused, 'the old CHECK refuses client tokens').toBe(true);
      await store.stopBus();
      await store.db.close();

      const first = await startServer(where);
      let clientToken: string;
      try {
        clientToken = first.bootstrap.clientToken;
        expect(first.bootstrap).toEqual({
          organizationId,
          appId,
          apiToken: api.token,
          studioToken: studio.token,
          clientToken: expect.stringMatching(/^iar_client_/),
        });
        expect(JSON.parse(readFileSync(join(dataDir, 'bootstrap.json'), 'utf8')).clientToken).toBe(clientToken);
        const call = (token: string, method = 'GET', path = `/v1/apps/${appId}/tasks`) => fetch(first.url + path, { method, headers: { 'Auth-token': token } });
        expect((await call(api.token)).status).toBe(200);
        expect((await call(studio.token)).status).toBe(200);
        expect((await call(clientToken)).status).toBe(200);
        expect((await call(clientToken, 'GET', `/v1/apps/${appId}/tasks/logs`)).status).toBe(403);
        // Tokens created after the upgrade get new ids (the identity moved past the copied ones on PostgreSQL).
        const created = await fetch(`${first.url}/v1/apps/${appId}/tokens`, {
          method: 'POST',
          headers: { 'Auth-token': studio.token, 'Content-Type': 'application/json' },
          body: '{"kind":"client"}',
        });
        expect(created.status).toBe(201);
        expect(((await created.json()) as { token: { id: number } }).token.id).toBeGreaterThan(studio.id);
      } finally {
        await first.close();
      }
      const second = await startServer(where);
      try {
        expect(second.bootstrap.clientToken).toBe(clientToken);
      } finally {
        await second.close();
      }
    } finally {
      await database?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});
