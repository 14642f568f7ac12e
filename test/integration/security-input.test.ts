import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Bootstrap } from '../../src/server/index.js';
import { startTestBackend, type TestBackend } from '../helpers/server.js';

/**
 * Hostile input on every route with a body, a query or a path parameter: wrong types, huge and negative
 * numbers, NaN, Infinity (`1e999` in JSON), very long strings, prototype keys. Each answer is a 4xx
 * `{ error: { code, message } }` or a success; never a 500, never a polluted Object.prototype, never a change
 * to stored data the request was refused for.
 */

const GUID = '8f14e45f-ceea-4e7a-9c5a-0b3c3f8f0a11';
const fn = (name: string, settings: Record<string, unknown>) => ({ functionPackage: `com.client.function.${name}`, settings });

let b: TestBackend;
let x: Bootstrap;
const ids = {} as { ds: number; entry: number; version: number; file: number; notification: number; action: number; page: number; token: number };

beforeAll(async () => {
  b = await startTestBackend({ limits: { runsPerMinute: 100_000, runTimeoutMs: 3000 } });
  x = b.server.bootstrap;
  const st = { token: x.studioToken };
  ids.ds = (await b.api('POST', `/v1/data-sources?appId=${x.appId}`, { json: { name: 'Fuzz' } })).body.dataSource.id;
  await b.api('POST', `/v1/data-sources/${ids.ds}/data`, { json: { entries: [{ a: 1, nested: { b: 2 } }] } });
  ids.entry = (await b.api('PUT', `/v1/data-sources/${ids.ds}/data`, { json: { a: 2 } })).body.id;
  ids.version = (await b.api('GET', `/v1/data-sources/${ids.ds}/versions`)).body.versions[0].id;
  ids.notification = (await b.api('PUT', `/v1/apps/${x.appId}/notifications`, { json: { data: { t: 1 } } })).body.notification.id;
  ids.page = (await b.api('POST', `/v1/apps/${x.appId}/pages`, { json: { name: 'P' } })).body.page.id;
  ids.action = (
    await b.api('POST', `/v1/apps/${x.appId}/tasks`, { json: { name: 'fuzz', environment: 'server', functions: [fn('return', { value: '{{ payload }}' })] } })
  ).body.action.id;
  await b.api('POST', `/v1/apps/${x.appId}/tasks/${ids.action}/publish`, { json: { publish: true } });
  ids.token = (await b.api('POST', `/v1/apps/${x.appId}/tokens`, { ...st, json: { name: 'fuzz' } })).body.token.id;
});
afterAll(() => b?.close());

/** [method, path, a valid body, token] for every route that reads a JSON body. */
function jsonRoutes(): [string, string, Record<string, unknown>, 'api' | 'studio'][] {
  const a = `/v1/apps/${x.appId}`;
  const ds = `/v1/data-sources/${ids.ds}`;
  return [
    ['PUT', a, { name: 'Demo app' }, 'studio'],
    ['POST', `${a}/tokens`, { name: 't' }, 'studio'],
    ['PUT', `/v1/organizations/${x.organizationId}`, { encryption: false }, 'studio'],
    ['POST', `/v1/organizations/${x.organizationId}/apps`, { name: 'n' }, 'studio'],
    ['POST', `/v1/data-sources?appId=${x.appId}`, { name: 'New', columns: ['a'], definition: {} }, 'studio'],
    ['PUT', ds, { name: 'Fuzz', columns: ['a'], definition: {}, hooks: [] }, 'studio'],
    ['POST', `${ds}/data`, { entries: [{ a: 1 }], append: true }, 'api'],
    ['PUT', `${ds}/data`, { a: 1 }, 'api'],
    ['POST', `${ds}/data/query`, { where: { a: 1 }, limit: 10, offset: 0, order: [['a', 'ASC']], attributes: ['a'], includePagination: true }, 'api'],
    ['PUT', `${ds}/data/${ids.entry}`, { a: 3 }, 'api'],
    ['POST', `${ds}/commit`, { entries: [{ data: { a: 1 } }], append: true, returnEntries: false }, 'api'],
    ['POST', `${ds}/versions/${ids.version}/data`, { limit: 1, where: { a: 1 } }, 'api'],
    ['POST', `${a}/notifications`, { limit: 10, offset: 0, order: 'id', direction: 'ASC', where: { 'data.t': 1 }, user: { id: 1 } }, 'api'],
    ['PUT', `${a}/notifications`, { data: { t: 1 }, status: 'draft', scope: { team: 'red' } }, 'api'],
    ['POST', `${a}/notifications/batch`, { notifications: [{ data: { t: 2 } }] }, 'api'],
    ['POST', `${a}/notifications/mark-as-read`, { recipientId: GUID, entries: [ids.notification] }, 'api'],
    ['PUT', `${a}/notifications/${ids.notification}`, { data: { t: 3 }, extendData: true }, 'api'],
    ['POST', `${a}/subscriptions`, { device: 'd', platform: 'android', token: 'push-1', uuid: GUID, user: { id: 1 } }, 'api'],
    ['POST', `${a}/tasks`, { name: 'created', environment: 'server', functions: [fn('return', { value: 1 })] }, 'api'],
    ['PUT', `${a}/tasks/${ids.action}`, { description: 'd' }, 'api'],
    ['POST', `${a}/tasks/${ids.action}/publish`, { publish: true }, 'api'],
    ['POST', `${a}/tasks/${ids.action}/run`, { payload: { n: 1 }, environment: 'live' }, 'api'],
    ['POST', `${a}/tasks/logs`, { id: ids.action, limit: 5, where: { type: 'app.action.completed' } }, 'api'],
    ['POST', `${a}/tasks/functions`, { package: 'com.fuzz.function.f', code: '() => 1', name: 'f', description: '' }, 'studio'],
    ['POST', `${a}/pages`, { name: 'p', script: '' }, 'api'],
    ['PUT', `${a}/pages/${ids.page}`, { name: 'p', script: '' }, 'api'],
    ['POST', `${a}/pages/${ids.page}/publish`, { publish: false }, 'api'],
    ['POST', `${a}/analytics`, { events: [{ type: 'analytics.event', data: { category: 'c', action: 'a' } }] }, 'api'],
  ];
}

/** Raw JSON texts replacing one field's value. `1e999` parses to Infinity, `-1e999` to -Infinity. */
const HOSTILE_VALUES = [
  'null',
  'true',
  '-1',
  '0',
  '1.5',
  '1e999',
  '-1e999',
  '9007199254740993',
  '"NaN"',
  '""',
  `"${'x'.repeat(300_000)}"`,
  '[]',
  '[null]',
  '{}',
  '{"__proto__":{"polluted":1}}',
  '{"constructor":{"prototype":{"polluted":1}}}',
  '"../../etc/passwd"',
  '"nul\\u0000byte"',
  '["nul\\u0000byte"]',
  '"<script>alert(1)</script>"',
];

const HOSTILE_BODIES = [
  '',
  '{',
  '[]',
  '"text"',
  '42',
  'null',
  '{"__proto__":{"polluted":1}}',
  '{"constructor":{"prototype":{"polluted":1}}}',
  '{"__proto__":{"polluted":1},"constructor":{"prototype":{"polluted":1}},"prototype":{"polluted":1}}',
];

type Problem = string;

/** A response is acceptable when it is a success or a 4xx with the error shape. */
function check(problems: Problem[], what: string, res: { status: number; body: any }): void {
  if (res.status >= 500) problems.push(`${what} → ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
  else if (res.status >= 400 && (typeof res.body?.error?.code !== 'string' || typeof res.body?.error?.message !== 'string'))
    problems.push(`${what} → ${res.status} without { error: { code, message } }: ${JSON.stringify(res.body).slice(0, 200)}`);
}

const polluted = () => ({}) as Record<string, unknown>;

describe('hostile JSON bodies', () => {
  it('whole-body garbage and prototype keys: 4xx or success, never a 500, never a polluted prototype', async () => {
    const problems: Problem[] = [];
    for (const [method, path, , who] of jsonRoutes()) {
      for (const body of HOSTILE_BODIES) {
        const token = who === 'studio' ? x.studioToken : x.apiToken;
        const res = await b.api(method, path, { token, body, headers: { 'Content-Type': 'application/json' } });
        check(problems, `${method} ${path} body ${body.slice(0, 40)}`, res);
      }
    }
    expect(problems).toEqual([]);
    expect(polluted().polluted).toBeUndefined();
    expect(Object.prototype).not.toHaveProperty('polluted');
  }, 60_000);

  it('each field of a valid body replaced by a hostile value: never a 500, never a polluted prototype', async () => {
    const problems: Problem[] = [];
    let n = 0;
    for (const [method, path, valid, who] of jsonRoutes()) {
      const token = who === 'studio' ? x.studioToken : x.apiToken;
      for (const field of Object.keys(valid)) {
        for (const value of HOSTILE_VALUES) {
          const parts = Object.entries(valid).map(([k, v]) => `${JSON.stringify(k)}:${k === field ? value : JSON.stringify(v)}`);
          const body = `{${parts.join(',')}}`;
          const res = await b.api(method, path, { token, body, headers: { 'Content-Type': 'application/json', 'Idempotency-Key': `k${n++}` } });
          check(problems, `${method} ${path} ${field}=${value.slice(0, 40)}`, res);
        }
      }
    }
    expect(problems).toEqual([]);
    expect(polluted().polluted).toBeUndefined();
  }, 120_000);

  it('entry data with prototype keys is stored as plain data and read back unchanged', async () => {
    const ds = `/v1/data-sources/${ids.ds}`;
    const raw = '{"__proto__":{"polluted":1},"constructor":{"prototype":{"polluted":1}},"name":"p"}';
    const inserted = await b.api('PUT', `${ds}/data`, { body: raw, headers: { 'Content-Type': 'application/json' } });
    expect(inserted.status).toBe(201);
    const read = await fetch(`${b.url}${ds}/data/${inserted.body.id}`, { headers: { 'Auth-token': x.apiToken } });
    const text = await read.text();
    expect(text).toContain('"__proto__":{"polluted":1}');
    expect(text).toContain('"constructor":{"prototype":{"polluted":1}}');
    // Queries, projections, indexes and templates treat them as ordinary columns.
    const q = await b.api('POST', `${ds}/data/query`, {
      json: { where: { name: 'p' }, attributes: ['name', '__proto__.polluted', 'constructor.prototype.polluted'] },
    });
    expect(q.status).toBe(200);
    const idx = await b.api('GET', `${ds}/indexes/constructor,__proto__,toString,hasOwnProperty`);
    expect(idx.status).toBe(200);
    expect(idx.body.indexes.toString).toEqual([]);
    expect(idx.body.indexes.hasOwnProperty).toEqual([]);
    const update = await b.api('PUT', `${ds}/data/${inserted.body.id}`, {
      body: '{"__proto__":{"polluted":2}}',
      headers: { 'Content-Type': 'application/json' },
    });
    expect(update.status).toBe(201);
    const commit = await b.api('POST', `${ds}/commit`, {
      body: `{"entries":[{"id":${inserted.body.id},"data":{"__proto__":{"polluted":3}}}],"append":true,"extend":true}`,
      headers: { 'Content-Type': 'application/json' },
    });
    expect(commit.status).toBe(200);
    // `__proto__` stays an ordinary column through projections, column-filtering rules and join names.
    const projected = await fetch(`${b.url}${ds}/data/query`, {
      method: 'POST',
      headers: { 'Auth-token': x.apiToken, 'Content-Type': 'application/json' },
      body: `{"where":{"name":"p"},"attributes":["__proto__","__proto__.polluted"],"join":{"__proto__":{"dataSourceId":${ids.ds},"on":{"name":"name"},"count":true}}}`,
    });
    const projectedText = await projected.text();
    expect(projected.status).toBe(200);
    expect(projectedText).toContain('"data":{"__proto__":{"polluted":');
    expect(projectedText).toContain('"joins":{"__proto__":1}');
    const filtered = (
      await b.api('POST', `/v1/data-sources?appId=${x.appId}`, {
        token: x.studioToken,
        json: { name: 'ProtoFiltered', accessRules: [{ type: ['select'], allow: 'loggedIn', exclude: ['secret'] }] },
      })
    ).body.dataSource.id;
    await b.api('PUT', `/v1/data-sources/${filtered}/data`, {
      token: x.studioToken,
      body: '{"__proto__":{"toString":1},"secret":1,"name":"f"}',
      headers: { 'Content-Type': 'application/json' },
    });
    const rows = await fetch(`${b.url}/v1/data-sources/${filtered}/data/query`, { method: 'POST', headers: { 'Auth-token': x.apiToken } });
    const rowsText = await rows.text();
    expect(rows.status).toBe(200);
    expect(rowsText).toContain('"data":{"__proto__":{"toString":1},"name":"f"}');
    const agg = await b.api('POST', `${ds}/data/query`, { json: { aggregate: [{ $group: { _id: '$data.name', __proto__: { $sum: 1 } } }] } });
    expect(agg.status).toBeLessThan(500);
    expect(polluted().polluted).toBeUndefined();
    const hooks = await b.api('PUT', ds, {
      token: x.studioToken,
      body: '{"hooks":[{"type":"operations","runOn":["insert"],"payload":{"__proto__":"upper","t":"{{constructor}}-{{__proto__.polluted}}"}}]}',
      headers: { 'Content-Type': 'application/json' },
    });
    expect(hooks.status).toBeLessThan(500);
    const hooked = await b.api('PUT', `${ds}/data`, { json: { name: 'h' } });
    expect(hooked.status).toBe(201);
    expect(hooked.body.data.t).toBe('-');
    expect(polluted().polluted).toBeUndefined();
    await b.api('PUT', ds, { token: x.studioToken, json: { hooks: [] } });
  });
});

describe('multipart entries', () => {
  it('parts named constructor, toString or __proto__ are stored as ordinary columns', async () => {
    const form = new FormData();
    form.append('constructor', 'c');
    form.append('toString', 't');
    form.append('__proto__', 'p');
    form.append('tags', 'a');
    form.append('tags', 'b');
    form.append('__proto__', new Blob(['file'], { type: 'text/plain' }), 'p.txt');
    const res = await fetch(`${b.url}/v1/data-sources/${ids.ds}/data`, { method: 'PUT', headers: { 'Auth-token': x.apiToken }, body: form });
    const text = await res.text();
    expect(res.status, text).toBe(201);
    const data = JSON.parse(text).data;
    expect(Object.keys(data).sort()).toEqual(['__proto__', '__proto__MediaFileId', 'constructor', 'tags', 'toString']);
    expect(data.constructor).toBe('c');
    expect(data.toString).toBe('t');
    expect(data.tags).toEqual(['a', 'b']);
    expect(data.__proto__).toMatch(/\/files\/\d+$/);
    expect(polluted().polluted).toBeUndefined();
  });
});

describe('hostile query strings and path parameters', () => {
  it('limits, offsets and ids: negative, NaN, huge, fractional → 4xx, never a 500', async () => {
    const a = `/v1/apps/${x.appId}`;
    const ds = `/v1/data-sources/${ids.ds}`;
    const values = ['-1', 'NaN', '1e999', 'Infinity', '99999999999999999999', '1.5', '', '%00', 'abc', '0x10', "1'%20OR%20'1'='1"];
    const templates = [
      `${a}/notifications?limit=%s`,
      `${a}/notifications?offset=%s`,
      `${a}/notifications?order=%s`,
      `${a}/notifications?direction=%s`,
      `${a}/notifications?count=%s`,
      `${a}/notifications?recipientId=%s&unread=true`,
      `${a}/analytics?limit=%s`,
      `${a}/analytics?offset=%s`,
      `${a}/analytics?type=%s`,
      `${a}/tasks/logs?limit=%s`,
      `${a}/tasks/logs?id=%s`,
      `${a}/tasks/logs?where=%s`,
      `${a}/tasks?environment=%s`,
      `${a}/tasks/${ids.action}/compile?html&payload=%s`,
      `${a}/tasks/${ids.action}/compile?html&environment=%s`,
      `${ds}/logs?limit=%s`,
      `${ds}/versions/${ids.version}/data?limit=%s`,
      `/v1/data-sources?appId=%s`,
      `/v1/data-sources?organizationId=%s`,
      `/v1/data-sources/Fuzz?organizationId=%s`,
      `/v1/apps/%s`,
      `/v1/apps/%s/tasks`,
      `${a}/tasks/%s`,
      `${a}/pages/%s`,
      `${a}/notifications/%s/deliveries`,
      `/v1/data-sources/%s`,
      `${ds}/data/%s`,
      `${ds}/files/%s`,
      `${ds}/versions/%s/data`,
      `${ds}/indexes/%s`,
      `/v1/organizations/%s`,
    ];
    const problems: Problem[] = [];
    for (const template of templates)
      for (const value of values) {
        const path = template.replace('%s', value);
        const res = await b.api('GET', path, { token: x.studioToken });
        if (res.headers.get('content-type')?.includes('text/html') && res.status === 200) continue; // the compile page
        check(problems, `GET ${path}`, res);
      }
    for (const [method, path] of [
      ['DELETE', `${a}/tokens/99999999999999999999`],
      ['DELETE', `${a}/notifications/-1`],
      ['PUT', `${ds}/data/1e999`],
      ['DELETE', `${ds}/data/NaN`],
      ['POST', `${ds}/versions/1.5/restore`],
      ['POST', `${a}/tasks/99999999999999999999/publish`],
    ] as const)
      check(problems, `${method} ${path}`, await b.api(method, path, { token: x.studioToken, json: { publish: true, a: 1 } }));
    expect(problems).toEqual([]);
  }, 60_000);

  it('a very long data source name, action name and path segment are refused or not found, never a 500', async () => {
    const long = 'n'.repeat(10_000);
    const problems: Problem[] = [];
    check(problems, 'GET long ds name', await b.api('GET', `/v1/data-sources/${long}`));
    check(problems, 'GET long action', await b.api('GET', `/v1/apps/${x.appId}/tasks/${long}`));
    const created = await b.api('POST', `/v1/data-sources?appId=${x.appId}`, { json: { name: long } });
    expect(created.status).toBe(400);
    const action = await b.api('POST', `/v1/apps/${x.appId}/tasks`, { json: { name: long, functions: [] } });
    expect(action.status).toBeGreaterThanOrEqual(400);
    check(problems, 'long action', action);
    expect(problems).toEqual([]);
  });

  it('a request line or headers over Node’s limit get a JSON 431, malformed HTTP a JSON 400', async () => {
    const res = await b.api('GET', `/v1/data-sources/${'n'.repeat(100_000)}`);
    expect(res.status).toBe(431);
    expect(res.body.error.code).toBe('HEADERS_TOO_LARGE');
    const { connect } = await import('node:net');
    const url = new URL(b.url);
    const raw = await new Promise<string>((done, fail) => {
      const socket = connect(Number(url.port), url.hostname, () => socket.write('GET /v1/apps HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n'));
      let text = '';
      socket.on('data', (chunk) => (text += chunk.toString()));
      socket.on('end', () => done(text));
      socket.on('error', fail);
    });
    expect(raw).toMatch(/^HTTP\/1\.1 400 /);
    expect(JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4)).error.code).toBe('INVALID_REQUEST');
  });

  it('header values: a long Idempotency-Key is a 400; odd Auth-token values are 401', async () => {
    const run = await b.api('POST', `/v1/apps/${x.appId}/tasks/${ids.action}/run`, { json: {}, headers: { 'Idempotency-Key': 'k'.repeat(201) } });
    expect(run.status).toBe(400);
    for (const token of ['x'.repeat(10_000), "' OR '1'='1", '%00', 'iar_studio_']) {
      const res = await b.api('GET', `/v1/apps/${x.appId}`, { token });
      expect(res.status).toBe(401);
      expect(res.body.error.code).toBe('INVALID_TOKEN');
    }
  });
});

describe('stored data survives refused requests', () => {
  it('a refused commit, import, update or restore leaves the entries exactly as they were', async () => {
    const ds = `/v1/data-sources/${ids.ds}`;
    const before = (await b.api('POST', `${ds}/data/query`, { json: {} })).body;
    const attempts: [string, string, string][] = [
      ['POST', `${ds}/commit`, '{"entries":[{"data":{"a":1}},{"id":-5,"data":{}}]}'],
      ['POST', `${ds}/commit`, '{"entries":[{"data":{"a":1}}],"delete":["x"]}'],
      ['POST', `${ds}/commit`, `{"entries":[{"id":${ids.entry},"data":{"a":1}}],"delete":[${ids.entry}]}`],
      ['POST', `${ds}/data`, '{"entries":[{"a":1},"oops"]}'],
      ['POST', `${ds}/data`, '{"entries":{"a":1}}'],
      ['PUT', `${ds}/data/${ids.entry}`, '[1,2]'],
      ['POST', `${ds}/data/query`, '{"type":"delete","where":{"$where":"true"}}'],
      ['POST', `${ds}/data/query`, '{"type":"delete","where":{"a":{"$regex":"(a)\\\\1"}}}'],
      ['POST', `${ds}/versions/999999/restore`, ''],
    ];
    for (const [method, path, body] of attempts) {
      const res = await b.api(method, path, { body, headers: { 'Content-Type': 'application/json' } });
      expect(res.status, `${method} ${path} ${body}`).toBeGreaterThanOrEqual(400);
      expect(res.status, `${method} ${path} ${body}`).toBeLessThan(500);
    }
    expect((await b.api('POST', `${ds}/data/query`, { json: {} })).body).toEqual(before);
  });
});
