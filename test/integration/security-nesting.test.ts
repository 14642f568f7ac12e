import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Bootstrap } from '../../src/server/index.js';
import { startTestBackend, type TestBackend } from '../helpers/server.js';

/**
 * Issue 14, nesting limits and the aggregate budget: deep JSON (a `$and` 2,000 deep, an entry 6,000 deep) was a
 * 500 (stack overflow), and a 2 KB `$let`/`$concatArrays` aggregate ended the process with "JavaScript heap out
 * of memory". Each is now a 4xx naming the limit, and the server answers a plain query right after.
 */

let b: TestBackend;
let x: Bootstrap;
let ds: number;

/** Raw JSON text: `{"$and":[ … {"a":1} … ]}` nested `depth` times (JSON.stringify of such a value could itself overflow). */
const deepAnd = (depth: number, leaf = '{"a":1}') => '{"$and":['.repeat(depth) + leaf + ']}'.repeat(depth);
/** `{"n":{"n":…1…}}` nested `depth` times. */
const deepObject = (depth: number) => '{"n":'.repeat(depth) + '1' + '}'.repeat(depth);
const send = (method: string, path: string, body: string, token?: string | null) =>
  b.api(method, path, { body, headers: { 'Content-Type': 'application/json' }, ...(token === undefined ? {} : { token }) });

const plainQueryWorks = async () => {
  const r = await b.api('POST', `/v1/data-sources/${ds}/data/query`, { json: { where: { a: 1 } } });
  expect(r.status).toBe(200);
  expect(r.body.entries).toHaveLength(1);
};

beforeAll(async () => {
  b = await startTestBackend();
  x = b.server.bootstrap;
  ds = (await b.api('POST', `/v1/data-sources?appId=${x.appId}`, { json: { name: 'Nesting' } })).body.dataSource.id;
  expect((await b.api('PUT', `/v1/data-sources/${ds}/data`, { json: { a: 1 } })).status).toBe(201);
});
afterAll(() => b?.close());

describe('nesting limits (400 NESTING_TOO_DEEP)', () => {
  it('a data source query whose where is $and 2,000 deep', async () => {
    const r = await send('POST', `/v1/data-sources/${ds}/data/query`, `{"where":${deepAnd(2000)}}`);
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('NESTING_TOO_DEEP');
    expect(r.body.error.message).toMatch(/256 levels.*bodyDepth/);
    await plainQueryWorks();
  });

  it('a where within the body limit but past limits.filterDepth (64) names the field', async () => {
    const r = await send('POST', `/v1/data-sources/${ds}/data/query`, `{"where":${deepAnd(40)}}`);
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({ code: 'NESTING_TOO_DEEP', field: 'Field "where"', limit: 64 });
    expect(r.body.error.message).toMatch(/where.*64 levels.*filterDepth/);
    // 30 levels of $and (61 of JSON) is a valid query.
    const ok = await send('POST', `/v1/data-sources/${ds}/data/query`, `{"where":${deepAnd(30)}}`);
    expect(ok.status).toBe(200);
    expect(ok.body.entries).toHaveLength(1);
  });

  it('an aggregate past limits.filterDepth', async () => {
    let expr = '"$data.a"';
    for (let i = 0; i < 70; i++) expr = `{"$abs":${expr}}`;
    const r = await send('POST', `/v1/data-sources/${ds}/data/query`, `{"aggregate":[{"$project":{"x":${expr}}}]}`);
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('NESTING_TOO_DEEP');
    expect(r.body.error.message).toMatch(/aggregate/);
  });

  it('an entry 6,000 deep on insert stores nothing', async () => {
    const r = await send('PUT', `/v1/data-sources/${ds}/data`, deepObject(6000));
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('NESTING_TOO_DEEP');
    const imported = await send('POST', `/v1/data-sources/${ds}/data`, `{"append":true,"entries":[${deepObject(6000)}]}`);
    expect(imported.status).toBe(400);
    expect(imported.body.error.code).toBe('NESTING_TOO_DEEP');
    const all = await b.api('POST', `/v1/data-sources/${ds}/data/query`, { json: {} });
    expect(all.body.entries).toHaveLength(1);
    // Within the limit, nesting is stored as sent.
    const fine = await send('PUT', `/v1/data-sources/${ds}/data`, deepObject(200));
    expect(fine.status).toBe(201);
    await b.api('DELETE', `/v1/data-sources/${ds}/data/${fine.body.id}`);
  });

  it('a deep getLogs where (body and query string)', async () => {
    const r = await send('POST', `/v1/apps/${x.appId}/tasks/logs`, `{"where":${deepAnd(2000)}}`);
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('NESTING_TOO_DEEP');
    const shallower = await send('POST', `/v1/apps/${x.appId}/tasks/logs`, `{"where":${deepAnd(40)}}`);
    expect(shallower.body.error.code).toBe('NESTING_TOO_DEEP');
    const query = await b.api('GET', `/v1/apps/${x.appId}/tasks/logs?where=${encodeURIComponent(deepAnd(100))}`);
    expect(query.status).toBe(400);
    expect(query.body.error.code).toBe('NESTING_TOO_DEEP');
    expect((await b.api('POST', `/v1/apps/${x.appId}/tasks/logs`, { json: { where: { type: 'app.action.completed' } } })).status).toBe(200);
  });

  it('a deep notification scope (create, batch, listing)', async () => {
    const a = `/v1/apps/${x.appId}/notifications`;
    const created = await send('PUT', a, `{"data":{"t":1},"scope":${deepObject(100)}}`);
    expect(created.status).toBe(400);
    expect(created.body.error).toMatchObject({ code: 'NESTING_TOO_DEEP', field: 'Field "scope"' });
    const batch = await send('POST', `${a}/batch`, `{"notifications":[{"data":{"t":1},"scope":${deepObject(100)}}]}`);
    expect(batch.body.error).toMatchObject({ code: 'NESTING_TOO_DEEP', field: 'Field "notifications[0].scope"' });
    const listed = await send('POST', a, `{"where":${deepAnd(2000)}}`);
    expect(listed.status).toBe(400);
    expect(listed.body.error.code).toBe('NESTING_TOO_DEEP');
    expect((await b.api('POST', a, { json: { scope: { team: 'red' } } })).status).toBe(200);
  });

  it('deep action settings and a deep trigger where on create', async () => {
    const settings = `{"name":"deep","environment":"server","functions":[{"functionPackage":"com.client.function.return","settings":{"value":${deepObject(6000)}}}]}`;
    const r = await send('POST', `/v1/apps/${x.appId}/tasks`, settings);
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('NESTING_TOO_DEEP');
    const trigger = `{"name":"deep2","environment":"server","triggers":[{"trigger":"log","where":${deepAnd(40)}}],"functions":[]}`;
    const t = await send('POST', `/v1/apps/${x.appId}/tasks`, trigger);
    expect(t.status).toBe(400);
    expect(t.body.error).toMatchObject({ code: 'NESTING_TOO_DEEP', field: 'Field "triggers[0].where"' });
    const list = (await b.api('GET', `/v1/apps/${x.appId}/tasks`)).body.actions as { name: string }[];
    expect(list.map((a) => a.name)).not.toContain('deep');
  });

  it('a device log upload nested too deep', async () => {
    const r = await send('POST', `/v1/apps/${x.appId}/tasks/logs`, `{"logs":[{"data":${deepObject(6000)}}]}`, b.clientToken);
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('NESTING_TOO_DEEP');
  });
});

describe('aggregate budget', () => {
  /**
   * `$let` multiplying an array: `copies` copies per level, `levels` levels. The 2 KB form (2 copies,
   * 30 levels: 2^30 elements) ended the process with "JavaScript heap out of memory"; it is now refused by the
   * nesting limit already, and 8 copies × 10 levels (also 2^30, 22 levels deep) by the aggregate budget.
   */
  const letBomb = (copies = 8, levels = 10) => {
    let inner: unknown = '$$a';
    for (let i = 0; i < levels; i++) inner = { $let: { vars: { a: { $concatArrays: Array.from({ length: copies }, () => '$$a') } }, in: inner } };
    return [{ $project: { x: { $size: { $let: { vars: { a: [1] }, in: inner } } } } }];
  };

  it('the 2 KB $let bomb of the issue (30 levels) is a 400 NESTING_TOO_DEEP', async () => {
    expect(JSON.stringify(letBomb(2, 30)).length).toBeLessThan(2100);
    const r = await b.api('POST', `/v1/data-sources/${ds}/data/query`, { json: { aggregate: letBomb(2, 30) } });
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('NESTING_TOO_DEEP');
    await plainQueryWorks();
  });

  it('the $let bomb within the nesting limit answers 422 AGGREGATE_TOO_LARGE, and the server lives', async () => {
    const started = Date.now();
    const r = await b.api('POST', `/v1/data-sources/${ds}/data/query`, { json: { aggregate: letBomb() } });
    expect(r.status).toBe(422);
    expect(r.body.error.code).toBe('AGGREGATE_TOO_LARGE');
    expect(r.body.error.message).toMatch(/limits\.aggregateBytes/);
    expect(Date.now() - started).toBeLessThan(15_000);
    await plainQueryWorks();
  });

  it('a public data source without a token gets the same answer', async () => {
    const pub = (await b.api('POST', `/v1/data-sources?appId=${x.appId}`, { token: x.studioToken, json: { name: 'NestingPublic', public: true } })).body
      .dataSource.id;
    await b.api('PUT', `/v1/data-sources/${pub}/data`, { json: { a: 1 } });
    const r = await b.api('POST', `/v1/data-sources/${pub}/data/query`, { token: null, json: { aggregate: letBomb() } });
    expect(r.status).toBe(422);
    expect(r.body.error.code).toBe('AGGREGATE_TOO_LARGE');
    await plainQueryWorks();
  });

  it('$reduce doubling an array 30 times answers 422 AGGREGATE_TOO_LARGE', async () => {
    const aggregate = [
      {
        $project: {
          x: { $size: { $reduce: { input: Array.from({ length: 30 }, (_, i) => i), initialValue: [1], in: { $concatArrays: ['$$value', '$$value'] } } } },
        },
      },
    ];
    const r = await b.api('POST', `/v1/data-sources/${ds}/data/query`, { json: { aggregate } });
    expect(r.status).toBe(422);
    expect(r.body.error.code).toBe('AGGREGATE_TOO_LARGE');
    await plainQueryWorks();
  });

  it('a value shared by reference (a tree of 2^42 leaves in a few KB of memory) is measured as a tree', async () => {
    let inner: unknown = '$$a';
    for (let i = 0; i < 14; i++) inner = { $let: { vars: { a: Array.from({ length: 8 }, () => '$$a') }, in: inner } };
    const r = await b.api('POST', `/v1/data-sources/${ds}/data/query`, {
      json: { aggregate: [{ $project: { x: { $let: { vars: { a: [1] }, in: inner } } } }] },
    });
    expect(r.status).toBe(422);
    expect(r.body.error.code).toBe('AGGREGATE_TOO_LARGE');
  });

  it('a run past limits.aggregateTimeoutMs is 422 QUERY_TIMEOUT', async () => {
    const slow = await startTestBackend({ limits: { aggregateTimeoutMs: 1 } });
    try {
      const id = (await slow.api('POST', `/v1/data-sources?appId=${slow.server.bootstrap.appId}`, { json: { name: 'Slow' } })).body.dataSource.id;
      await slow.api('POST', `/v1/data-sources/${id}/data`, { json: { entries: Array.from({ length: 2000 }, (_, i) => ({ i })) } });
      const aggregate = [
        {
          $project: {
            x: {
              $reduce: {
                input: { $map: { input: Array.from({ length: 200 }, (_, i) => i), in: { $add: ['$$this', '$data.i'] } } },
                initialValue: 0,
                in: { $add: ['$$value', '$$this'] },
              },
            },
          },
        },
      ];
      const r = await slow.api('POST', `/v1/data-sources/${id}/data/query`, { json: { aggregate } });
      expect(r.status).toBe(422);
      expect(r.body.error.code).toBe('QUERY_TIMEOUT');
    } finally {
      await slow.close();
    }
  });

  it('ordinary aggregates are unchanged', async () => {
    const r = await b.api('POST', `/v1/data-sources/${ds}/data/query`, {
      json: { aggregate: [{ $group: { _id: '$data.a', n: { $sum: 1 }, s: { $addToSet: '$data.a' } } }, { $project: { _id: 0, a: '$_id', n: 1, s: 1 } }] },
    });
    expect(r.status).toBe(200);
    expect(r.body.entries).toEqual([{ a: 1, n: 1, s: [1] }]);
  });
});
