import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Bootstrap } from '../../src/server/index.js';
import { startTestBackend, type TestBackend } from '../helpers/server.js';
import { eventually } from '../helpers/wait.js';

/**
 * Issue 14, linear-time matching on every where-like path. Each hostile pattern below stalled the whole backend
 * on the old code with one short request (e.g. `(a|a?)+$` on a 26-character value: 19.9 s in a data source
 * query; `^(a+)+$` in getLogs: 37 s). The values here are 40 characters, so a backtracking engine would need
 * hours: on the old code these tests time out. With RE2 each answers at once, and a plain request sent right
 * after is not held up. The bounds (5 s) are generous so a loaded machine passes; the work is microseconds.
 */

const EVIL_TEXT = `${'a'.repeat(40)}!`;
const EVIL = ['(a|a?)+$', '^(a+)+$', '([a-z]*)*$', '(a|aa)+b'];
const BOUND_MS = 5000;

let b: TestBackend;
let x: Bootstrap;
let ds: number;

async function timed<T>(fn: () => Promise<T>): Promise<T> {
  const started = Date.now();
  const out = await fn();
  expect(Date.now() - started).toBeLessThan(BOUND_MS);
  return out;
}
const plain = () => timed(() => b.api('GET', `/v1/data-sources/${ds}`)).then((r) => expect(r.status).toBe(200));

beforeAll(async () => {
  b = await startTestBackend();
  x = b.server.bootstrap;
  ds = (await b.api('POST', `/v1/data-sources?appId=${x.appId}`, { json: { name: 'Patterns' } })).body.dataSource.id;
  await b.api('POST', `/v1/data-sources/${ds}/data`, {
    json: {
      append: true,
      entries: [
        { name: EVIL_TEXT, pattern: '^(a+)+$' },
        { name: 'abc', pattern: 'b' },
      ],
    },
  });
});
afterAll(() => b?.close());

describe('data source queries', () => {
  it('$regex with catastrophic-backtracking patterns', async () => {
    for (const pattern of EVIL) {
      const r = await timed(() => b.api('POST', `/v1/data-sources/${ds}/data/query`, { json: { where: { name: { $regex: pattern } } } }));
      expect(r.status).toBe(200);
      const expected = new RegExp(pattern).test('aaaa!') ? [EVIL_TEXT] : [];
      expect(r.body.entries.map((e: { data: { name: string } }) => e.data.name).filter((n: string) => n === EVIL_TEXT)).toEqual(expected);
      await plain();
    }
  });

  it('$regex inside $or / $not / $elemMatch (the full evaluator, not the fast path)', async () => {
    const r = await timed(() =>
      b.api('POST', `/v1/data-sources/${ds}/data/query`, {
        json: { where: { $or: [{ name: { $not: { $regex: '^(a+)+$' } } }, { tags: { $elemMatch: { $regex: '(a|a?)+$' } } }] } },
      }),
    );
    expect(r.status).toBe(200);
    expect(r.body.entries).toHaveLength(2);
  });

  it('$iLike and $like with runs of wildcards grow linearly', async () => {
    const long = 'x'.repeat(20_000);
    const id = (await b.api('PUT', `/v1/data-sources/${ds}/data`, { json: { name: long } })).body.id;
    for (const where of [{ name: { $iLike: '%%%%%%%%%%%%y' } }, { name: { $like: '%x%x%x%x%x%x%x%x%y' } }, { name: { $iLike: '_%_%_%_%_%_%_%_%y' } }]) {
      const r = await timed(() => b.api('POST', `/v1/data-sources/${ds}/data/query`, { json: { where } }));
      expect(r.status).toBe(200);
      expect(r.body.entries).toEqual([]);
    }
    const hit = await b.api('POST', `/v1/data-sources/${ds}/data/query`, { json: { where: { name: { $iLike: '%X%X' } } } });
    expect(hit.body.entries.map((e: { id: number }) => e.id)).toEqual([id]);
    await b.api('DELETE', `/v1/data-sources/${ds}/data/${id}`);
  });

  it('$regexMatch in an aggregate, with a literal pattern and with a pattern read from the data', async () => {
    const literal = await timed(() =>
      b.api('POST', `/v1/data-sources/${ds}/data/query`, {
        json: { aggregate: [{ $project: { _id: 0, m: { $regexMatch: { input: '$data.name', regex: '(a|a?)+$' } } } }] },
      }),
    );
    expect(literal.status).toBe(200);
    expect(literal.body.entries).toEqual([{ m: true }, { m: true }]);
    const fromData = await timed(() =>
      b.api('POST', `/v1/data-sources/${ds}/data/query`, {
        json: { aggregate: [{ $project: { _id: 0, m: { $regexMatch: { input: '$data.name', regex: '$data.pattern' } } } }] },
      }),
    );
    expect(fromData.status).toBe(200);
    expect(fromData.body.entries).toEqual([{ m: false }, { m: true }]);
    const found = await b.api('POST', `/v1/data-sources/${ds}/data/query`, {
      json: {
        aggregate: [
          { $match: { 'data.name': 'abc' } },
          {
            $project: { _id: 0, f: { $regexFind: { input: '$data.name', regex: '(b)(c)' } }, all: { $regexFindAll: { input: '$data.name', regex: '[a-c]' } } },
          },
        ],
      },
    });
    expect(found.body.entries).toEqual([
      { f: { match: 'bc', idx: 1, captures: ['b', 'c'] }, all: ['a', 'b', 'c'].map((m, idx) => ({ match: m, idx, captures: [] })) },
    ]);
    const match = await timed(() =>
      b.api('POST', `/v1/data-sources/${ds}/data/query`, { json: { aggregate: [{ $match: { 'data.name': { $regex: '^(a+)+$' } } }] } }),
    );
    expect(match.status).toBe(200);
    expect(match.body.entries).toEqual([]);
    const bad = await b.api('POST', `/v1/data-sources/${ds}/data/query`, {
      json: { aggregate: [{ $project: { m: { $regexMatch: { input: '$data.name', regex: { $concat: ['(a)', '\\1'] } } } } }] },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toMatch(/RE2 syntax/);
    await plain();
  });

  it('$dateFromString: a format whose text is a pattern is quoted or refused; ordinary formats parse', async () => {
    // mingo checks the date against a RegExp built from the format's literal text (only some characters quoted):
    // `(a+)+x%Y…` over 40 `a`s before the date would take hours on V8's backtracking engine.
    const dateString = `${'a'.repeat(40)} 2020 01 02`;
    const date = (format: unknown, name = 'abc') => ({
      aggregate: [
        { $match: { 'data.name': name } },
        { $project: { _id: 0, d: { $dateFromString: { dateString: { $literal: dateString }, format, onError: 'no' } } } },
      ],
    });
    // Groups and `+` are quoted: the text is matched literally (this date does not hold it).
    const quoted = await timed(() => b.api('POST', `/v1/data-sources/${ds}/data/query`, { json: date('(a+)+x%Y %m %d') }));
    expect(quoted.status).toBe(200);
    expect(quoted.body.entries).toEqual([{ d: 'no' }]);
    // Quantifiers and anchors, which mingo leaves half-quoted, are refused, from the pipeline or from the data.
    const refused = await timed(() => b.api('POST', `/v1/data-sources/${ds}/data/query`, { json: date('a*a*a*a*x%Y %m %d') }));
    expect(refused.status).toBe(400);
    expect(refused.body.error.message).toMatch(/\$dateFromString\.format/);
    const fromData = await timed(() => b.api('POST', `/v1/data-sources/${ds}/data/query`, { json: date({ $concat: ['$data.pattern', '%Y'] }, EVIL_TEXT) }));
    expect(fromData.status).toBe(400);
    const noSpecifier = await b.api('POST', `/v1/data-sources/${ds}/data/query`, { json: date('abc') });
    expect(noSpecifier.status).toBe(400);
    expect(noSpecifier.body.error.message).toMatch(/\$dateFromString\.format must hold specifiers/);
    // Many variable-width specifiers (`%U` is one or two digits) would backtrack exponentially too.
    const many = await timed(() =>
      b.api('POST', `/v1/data-sources/${ds}/data/query`, {
        json: {
          aggregate: [
            {
              $project: {
                _id: 0,
                d: { $dateFromString: { dateString: { $literal: `2020 01 02 ${'1'.repeat(60)}!` }, format: `%Y %m %d ${'%U'.repeat(40)}` } },
              },
            },
          ],
        },
      }),
    );
    expect(many.status).toBe(400);
    const ok = await b.api('POST', `/v1/data-sources/${ds}/data/query`, {
      json: {
        aggregate: [
          { $match: { 'data.name': 'abc' } },
          {
            $project: {
              _id: 0,
              d: { $dateFromString: { dateString: '2020-01-02T03:04:05.678', format: '%Y-%m-%dT%H:%M:%S.%L' } },
              e: { $dateFromString: { dateString: '02/01/2020', format: '%d/%m/%Y' } },
              g: { $dateFromString: { dateString: '(03:04) 02.01.2020', format: '(%H:%M) %d.%m.%Y' } },
              f: { $dateFromString: { dateString: 'not a date', format: '%Y-%m-%d', onError: 'bad' } },
            },
          },
        ],
      },
    });
    expect(ok.status).toBe(200);
    expect(ok.body.entries).toEqual([{ d: '2020-01-02T03:04:05.678Z', e: '2020-01-02T00:00:00.000Z', f: 'bad', g: '2020-01-02T03:04:00.000Z' }]);
    await plain();
  });
});

describe('getLogs where', () => {
  it('^(a+)+$ over a log record (body and query string)', async () => {
    const action = await b.client.App.Actions.create({
      name: 'returns-evil',
      environment: 'server',
      functions: [{ functionPackage: 'com.client.function.return', settings: { value: EVIL_TEXT } }],
    });
    await b.client.App.Actions.publish(action.id, true);
    expect(await b.client.App.Actions.runWithResult(action.name)).toBe(EVIL_TEXT);
    for (const pattern of EVIL) {
      const where = { 'data.result': { $regex: pattern } };
      const r = await timed(() => b.api('POST', `/v1/apps/${x.appId}/tasks/logs`, { json: { where } }));
      expect(r.status).toBe(200);
      expect(r.body.count).toBe(new RegExp(pattern).test('aaaa!') ? 1 : 0);
      const q = await timed(() => b.api('GET', `/v1/apps/${x.appId}/tasks/logs?where=${encodeURIComponent(JSON.stringify(where))}`));
      expect(q.body.count).toBe(r.body.count);
    }
    await plain();
  });
});

describe('notifications', () => {
  it('a where with ^(a+)+$ (listing), and stored scopes with it matched against the records of a caller', async () => {
    const a = `/v1/apps/${x.appId}/notifications`;
    const token = x.studioToken;
    const created = await b.api('PUT', a, { token, json: { data: { text: EVIL_TEXT } } });
    expect(created.status).toBe(201);
    for (const pattern of EVIL) {
      const expected = new RegExp(pattern).test('aaaa!') ? 1 : 0;
      const byWhere = await timed(() => b.api('POST', a, { token, json: { where: { data: { text: { $regex: pattern } } } } }));
      expect(byWhere.status).toBe(200);
      expect(byWhere.body.notifications).toHaveLength(expected);
      const scoped = await b.api('PUT', a, { token, json: { data: { scoped: pattern }, scope: { team: { $regex: pattern } } } });
      expect(scoped.status).toBe(201);
    }
    const byScope = await timed(() => b.api('POST', a, { token, json: { scope: { team: EVIL_TEXT } } }));
    expect(byScope.status).toBe(200);
    const matched = byScope.body.notifications.map((n: { data: { scoped?: string } }) => n.data.scoped).filter(Boolean);
    expect(matched.sort()).toEqual(EVIL.filter((p) => new RegExp(p).test('aaaa!')).sort());
    await plain();
  });
});

describe('trigger where', () => {
  it('a log trigger whose where runs (a|a?)+$ over the written columns fires at once', async () => {
    const action = await b.client.App.Actions.create({
      name: 'evil-trigger',
      environment: 'server',
      triggers: [{ trigger: 'log', where: { dataSourceId: ds, data: { columns: { $regex: '(a|a?)+$' } } } }],
      functions: [{ functionPackage: 'com.client.function.return', settings: { value: 'fired' } }],
    });
    await b.client.App.Actions.publish(action.id, true);
    const r = await timed(() => b.api('PUT', `/v1/data-sources/${ds}/data`, { json: { [EVIL_TEXT]: 1 } }));
    expect(r.status).toBe(201);
    await plain();
    const logs = await eventually(async () => {
      const { logs } = await b.client.App.Actions.getLogs({ id: action.id });
      return logs.length > 0 && logs;
    });
    expect(logs[0]!.data.result).toBe('fired');
    await b.api('DELETE', `/v1/data-sources/${ds}/data/${r.body.id}`);
  });

  it('a trigger where with a pattern RE2 cannot run is refused at create, naming it', async () => {
    const r = await b.api('POST', `/v1/apps/${x.appId}/tasks`, {
      json: { name: 'backref', environment: 'server', triggers: [{ trigger: 'log', where: { type: { $regex: '(a)\\1' } } }], functions: [] },
    });
    expect(r.status).toBe(400);
    expect(JSON.stringify(r.body.error)).toMatch(/triggers\[0\]\.where.*RE2 syntax/);
  });
});

describe('bounded filters (size and time)', () => {
  it('a filter holds at most 1,000 conditions and a list 10,000 values (400); a 10,000-value $in answers', async () => {
    const many = Object.fromEntries(Array.from({ length: 1001 }, (_, i) => [`c${i}`, i]));
    const r = await b.api('POST', `/v1/data-sources/${ds}/data/query`, { json: { where: many } });
    expect(r.status).toBe(400);
    expect(r.body.error.message).toMatch(/at most 1000 conditions/);
    const long = await b.api('POST', `/v1/data-sources/${ds}/data/query`, {
      json: { where: { name: { $in: Array.from({ length: 10_001 }, (_, i) => `n${i}`) } } },
    });
    expect(long.status).toBe(400);
    expect(long.body.error.message).toMatch(/more than 10000/);
    const logs = await b.api('POST', `/v1/apps/${x.appId}/tasks/logs`, { json: { where: many } });
    expect(logs.status).toBe(400);
    const fine = await timed(() =>
      b.api('POST', `/v1/data-sources/${ds}/data/query`, { json: { where: { name: { $in: [...Array.from({ length: 9_999 }, (_, i) => `n${i}`), 'abc'] } } } }),
    );
    expect(fine.body.entries.map((e: { data: { name: string } }) => e.data.name)).toEqual(['abc']);
  });

  it('matching past limits.aggregateTimeoutMs is 422 QUERY_TIMEOUT, and the server answers right after', async () => {
    const slow = await startTestBackend({ limits: { aggregateTimeoutMs: 1 } });
    try {
      const id = (await slow.api('POST', `/v1/data-sources?appId=${slow.server.bootstrap.appId}`, { json: { name: 'SlowWhere' } })).body.dataSource.id;
      await slow.api('POST', `/v1/data-sources/${id}/data`, {
        json: { entries: Array.from({ length: 50_000 }, (_, i) => ({ email: `user${i}@example.com` })) },
      });
      // $regex is matched by the JS evaluator (not translated to SQL): 50,000 RE2 matches take well over 1 ms.
      const r = await slow.api('POST', `/v1/data-sources/${id}/data/query`, { json: { where: { email: { $regex: '^[a-z]+\\d+@example\\.com$' } }, limit: 1 } });
      expect(r.status).toBe(422);
      expect(r.body.error.code).toBe('QUERY_TIMEOUT');
      expect((await slow.api('GET', `/v1/data-sources/${id}`)).status).toBe(200);
    } finally {
      await slow.close();
    }
  });

  for (const [how, limits] of [
    ['in the entry cache', {}],
    ['scanned in pages (larger than the entry cache)', { entryCacheEntries: 0 }],
  ] as const)
    it(`a join whose where matches past limits.aggregateTimeoutMs is 422 QUERY_TIMEOUT naming the join (${how})`, async () => {
      const slow = await startTestBackend({ limits: { aggregateTimeoutMs: 1, ...limits } });
      try {
        const { parent, joined } = await parentAndJoined(slow);
        await slow.api('PUT', `/v1/data-sources/${parent}/data`, { json: { email: 'user1@example.com' } });
        await slow.api('POST', `/v1/data-sources/${joined}/data`, {
          json: { entries: Array.from({ length: 50_000 }, (_, i) => ({ email: `user${i}@example.com` })) },
        });
        // The parent's where is one entry; the join's (a $regex, matched in JS) runs over 50,000 entries.
        const join = { J: { dataSourceId: joined, on: { 'data.email': 'data.email' }, where: { email: { $regex: '^[a-z]+\\d+@example\\.com$' } } } };
        const r = await slow.api('POST', `/v1/data-sources/${parent}/data/query`, { json: { join } });
        expect(r.status).toBe(422);
        expect(r.body.error.code).toBe('QUERY_TIMEOUT');
        expect(r.body.error.message).toMatch(/^join\.J\.where: matching took longer than 1 ms/);
        expect((await slow.api('GET', `/v1/data-sources/${parent}`)).status).toBe(200);
      } finally {
        await slow.close();
      }
    });

  it('a join of a data source larger than the entry cache holds at most limits.joinEntries matches (422 JOIN_TOO_LARGE past it)', async () => {
    const small = await startTestBackend({ limits: { entryCacheEntries: 0, joinEntries: 1_000 } });
    try {
      const { parent, joined } = await parentAndJoined(small);
      await small.api('PUT', `/v1/data-sources/${parent}/data`, { json: { k: 7 } });
      await small.api('POST', `/v1/data-sources/${joined}/data`, {
        json: { entries: Array.from({ length: 3_000 }, (_, i) => ({ k: i % 10, tag: `t${i % 10}` })) },
      });
      const query = (where?: unknown, count = true) =>
        small.api('POST', `/v1/data-sources/${parent}/data/query`, {
          json: { join: { J: { dataSourceId: joined, on: { 'data.k': 'data.k' }, where, ...(count ? { count } : {}) } } },
        });
      // Counted by the database (sql/joins.ts): nothing is held, so no bound applies.
      const counted = await query();
      expect(counted.status).toBe(200);
      expect(counted.body.entries[0].joins.J).toBe(300);
      // The entries of the join, without a where: all 3,000 entries would be held.
      const all = await query(undefined, false);
      expect(all.status).toBe(422);
      expect(all.body.error).toMatchObject({ code: 'JOIN_TOO_LARGE', limit: 1_000 });
      expect(all.body.error.message).toMatch(/^join\.J\.where: more than 1000 entries of the joined data source match/);
      // A where matched in JS (nothing of it translates) that keeps 300 of them: read in pages, answered.
      const some = await query({ tag: { $regex: '^t7$' } });
      expect(some.status).toBe(200);
      expect(some.body.entries[0].joins.J).toBe(300);
      // The same with a part the database tests.
      const picked = await query({ k: 7, tag: { $regex: '7$' } });
      expect(picked.status).toBe(200);
      expect(picked.body.entries[0].joins.J).toBe(300);
      // A join without `on` appending its best 2 keeps only those, whatever the number of matches.
      const appended = await small.api('POST', `/v1/data-sources/${parent}/data/query`, {
        json: { join: { J: { dataSourceId: joined, order: [['k', 'DESC']], limit: 2 } } },
      });
      expect(appended.status).toBe(200);
      expect(appended.body.entries.map((e: { dataSourceId: number; data: { k: number } }) => [e.dataSourceId, e.data.k])).toEqual([
        [parent, 7],
        [joined, 9],
        [joined, 9],
      ]);
    } finally {
      await small.close();
    }
  });

  it('a counted join (run by SQL where it may) sees only the columns the joined rule shows, and only a readable data source', async () => {
    const small = await startTestBackend();
    try {
      const x = small.server.bootstrap;
      const { parent, joined } = await parentAndJoined(small);
      await small.api('POST', `/v1/data-sources/${parent}/data`, { json: { entries: [{ k: 1 }, { k: 2 }] } });
      await small.api('POST', `/v1/data-sources/${joined}/data`, {
        json: {
          entries: [
            { k: 1, salary: 1 },
            { k: '1', salary: 2 },
            { k: 2, salary: 1 },
          ],
        },
      });
      const tokens = (await small.api('GET', `/v1/apps/${x.appId}/tokens`, { token: x.studioToken })).body.tokens as { id: number; kind: string }[];
      const api = tokens.find((t) => t.kind === 'api')!;
      const rule = (accessRules: unknown[]) => small.api('PUT', `/v1/data-sources/${joined}`, { token: x.studioToken, json: { accessRules } });
      const counts = async (join: Record<string, unknown>) => {
        const r = await small.api('POST', `/v1/data-sources/${parent}/data/query`, {
          json: { join: { J: { dataSourceId: joined, count: true, ...join } }, order: [['id', 'ASC']] },
        });
        return r.status === 200 ? r.body.entries.map((e: { joins: { J: number } }) => e.joins.J) : { status: r.status, code: r.body.error.code };
      };
      expect((await rule([{ type: ['select'], allow: { tokens: [api.id] }, exclude: ['salary'] }])).status).toBe(200);
      expect(await counts({ on: { k: 'k' } })).toEqual([2, 1]);
      // A hidden column is missing for the join: as a key or in its where, nothing matches.
      expect(await counts({ on: { k: 'salary' } })).toEqual([0, 0]);
      expect(await counts({ on: { k: 'k' }, where: { salary: { $gte: 1 } } })).toEqual([0, 0]);
      // A joined data source the caller may not read is not found, as the JS path answers.
      expect((await rule([{ type: ['select'], allow: { tokens: [] } }])).status).toBe(200);
      const refused = await counts({ on: { k: 'k' } });
      expect(refused).toEqual(await counts({ on: { k: 'k' }, where: { k: { $regex: '.' } } }));
      expect(refused).toMatchObject({ status: 404, code: 'DATA_SOURCE_NOT_FOUND' });
    } finally {
      await small.close();
    }
  });

  it('a joined data source read in pages shows the join only the columns its access rule leaves visible', async () => {
    const small = await startTestBackend({ limits: { entryCacheEntries: 0 } });
    try {
      const x = small.server.bootstrap;
      const { parent, joined } = await parentAndJoined(small);
      await small.api('PUT', `/v1/data-sources/${parent}/data`, { json: { k: 1 } });
      await small.api('POST', `/v1/data-sources/${joined}/data`, {
        json: { entries: Array.from({ length: 3_000 }, (_, i) => ({ k: i % 3, name: `n${i}`, salary: 1_000 + i })) },
      });
      const tokens = (await small.api('GET', `/v1/apps/${x.appId}/tokens`, { token: x.studioToken })).body.tokens as { id: number; kind: string }[];
      const api = tokens.find((t) => t.kind === 'api')!;
      const rule = await small.api('PUT', `/v1/data-sources/${joined}`, {
        token: x.studioToken,
        json: { accessRules: [{ type: ['select'], allow: { tokens: [api.id] }, exclude: ['salary'] }] },
      });
      expect(rule.status).toBe(200);
      const join = (where: unknown) => ({ join: { J: { dataSourceId: joined, on: { 'data.k': 'data.k' }, where, order: [['name', 'ASC']] } } });
      // A where on the hidden column sees it missing, in SQL (candidates) and in JS alike: nothing matches.
      for (const where of [{ salary: { $gt: 0 } }, { salary: { $gt: 0 }, name: { $regex: '^n1' } }]) {
        const r = await small.api('POST', `/v1/data-sources/${parent}/data/query`, { json: join(where) });
        expect(r.status).toBe(200);
        expect(r.body.entries[0].joins.J).toEqual([]);
      }
      const visible = await small.api('POST', `/v1/data-sources/${parent}/data/query`, { json: join({ name: { $regex: '^n1\\d$' } }) });
      expect(visible.status).toBe(200);
      expect(visible.body.entries[0].joins.J.map((e: { data: unknown }) => e.data)).toEqual([
        { k: 1, name: 'n10' },
        { k: 1, name: 'n13' },
        { k: 1, name: 'n16' },
        { k: 1, name: 'n19' },
      ]);
    } finally {
      await small.close();
    }
  });

  it('a distinct select scanning a data source larger than the entry cache holds at most limits.distinctRows rows (422 past it)', async () => {
    const small = await startTestBackend({ limits: { entryCacheEntries: 0, distinctRows: 1_000 } });
    try {
      const id = (await small.api('POST', `/v1/data-sources?appId=${small.server.bootstrap.appId}`, { json: { name: 'Distinct' } })).body.dataSource.id;
      await small.api('POST', `/v1/data-sources/${id}/data`, { json: { entries: Array.from({ length: 3_000 }, (_, i) => ({ k: i % 10, n: i, tag: 't' })) } });
      // A where left to the JS evaluator ($regex): the select is scanned.
      const query = (attributes: string[]) =>
        small.api('POST', `/v1/data-sources/${id}/data/query`, {
          json: { where: { tag: { $regex: '^t$' } }, attributes, distinct: true, limit: 5, includePagination: true },
        });
      const many = await query(['data.n']);
      expect(many.status).toBe(422);
      expect(many.body.error).toMatchObject({ code: 'DISTINCT_TOO_LARGE', limit: 1_000 });
      const few = await query(['data.k']);
      expect(few.status).toBe(200);
      expect(few.body.pagination.total).toBe(10);
      expect(few.body.entries).toHaveLength(5);
    } finally {
      await small.close();
    }
  });

  it('the joins of a query share its time budget: one join answers, 400 of them together are 422', async () => {
    const slow = await startTestBackend({ limits: { aggregateTimeoutMs: 2_000 } });
    try {
      const { parent, joined } = await parentAndJoined(slow);
      await slow.api('PUT', `/v1/data-sources/${parent}/data`, { json: { n: 1 } });
      await slow.api('POST', `/v1/data-sources/${joined}/data`, {
        json: { entries: Array.from({ length: 2_000 }, (_, i) => ({ n: i, list: Array.from({ length: 100 }, (_, j) => j) })) },
      });
      // One join's where walks 2,000 arrays of 100 elements: 15 ms on this machine idle, 45–140 ms beside a CPU hog
      // or on PostgreSQL, so one join fits the 2 s budget and 400 of them (6 s or more of matching) do not.
      const where = { list: { $elemMatch: { $in: [-1, -2] } } };
      const query = (joins: number) => ({
        join: Object.fromEntries(Array.from({ length: joins }, (_, i) => [`J${i}`, { dataSourceId: joined, on: { 'data.n': 'data.n' }, where, count: true }])),
      });
      // The first query also loads the joined data source into the entry cache.
      expect((await slow.api('POST', `/v1/data-sources/${parent}/data/query`, { json: query(1) })).status).toBe(200);
      const one = await slow.api('POST', `/v1/data-sources/${parent}/data/query`, { json: query(1) });
      expect(one.status).toBe(200);
      expect(one.body.entries[0].joins.J0).toBe(0);
      const r = await slow.api('POST', `/v1/data-sources/${parent}/data/query`, { json: query(400) });
      expect(r.status).toBe(422);
      expect(r.body.error.code).toBe('QUERY_TIMEOUT');
      expect(r.body.error.message).toMatch(/^join\.J\d+\.where: matching took longer than 2000 ms/);
    } finally {
      await slow.close();
    }
  }, 60_000);

  for (const [how, limits] of [
    ['in the entry cache', {}],
    ['scanned in pages (larger than the entry cache)', { entryCacheEntries: 0 }],
  ] as const)
    it(`a query delete matching past limits.aggregateTimeoutMs is 422 QUERY_TIMEOUT and deletes nothing (${how})`, async () => {
      const slow = await startTestBackend({ limits: { aggregateTimeoutMs: 1, ...limits } });
      try {
        const id = (await slow.api('POST', `/v1/data-sources?appId=${slow.server.bootstrap.appId}`, { json: { name: 'SlowDelete' } })).body.dataSource.id;
        await slow.api('POST', `/v1/data-sources/${id}/data`, {
          json: { entries: Array.from({ length: 50_000 }, (_, i) => ({ email: `user${i}@example.com` })) },
        });
        // Not translated (a $regex): 50,000 RE2 matches take well over 1 ms, under any load.
        const where = { email: { $regex: '^[a-z]+\\d+@example\\.com$' } };
        const r = await slow.api('POST', `/v1/data-sources/${id}/data/query`, { json: { type: 'delete', where } });
        expect(r.status).toBe(422);
        expect(r.body.error.code).toBe('QUERY_TIMEOUT');
        // Every entry is still there (the list of every entry matches nothing: no budget to pass).
        const left = await slow.api('GET', `/v1/data-sources/${id}/data`);
        expect(left.status).toBe(200);
        expect(left.body.entries).toHaveLength(50_000);
      } finally {
        await slow.close();
      }
    });
});

/** Two new data sources of the backend's app: a parent and one it joins. */
async function parentAndJoined(b: TestBackend): Promise<{ parent: number; joined: number }> {
  const create = async (name: string) =>
    (await b.api('POST', `/v1/data-sources?appId=${b.server.bootstrap.appId}`, { json: { name } })).body.dataSource.id as number;
  return { parent: await create('Parent'), joined: await create('Joined') };
}
