import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENTRY_CACHE_CASES, startTestBackend, type TestBackend } from '../helpers/server.js';

/**
 * Issue 14, "big answers are not materialised": a commit's answer (the whole data set) is spliced from the rows as
 * stored, not parsed, sorted and serialized again. It must equal, entry for entry and in the same order, what a
 * select of every entry answers; with a rule that hides columns the answer is built the former way, without them.
 */
describe.each(ENTRY_CACHE_CASES)('data sources: the commit answer copied from the rows (entry cache $cache)', ({ entryCacheEntries }) => {
  let b: TestBackend;
  beforeAll(async () => {
    b = await startTestBackend({ limits: { entryCacheEntries } });
  });
  afterAll(() => b?.close());

  const tricky = [
    { name: 'é – ☃ 𝄞', line: 'a\u2028b', quote: 'say "hi"\n\\', n: -0, big: 1e21, small: 5e-7 },
    { nested: { list: [1, { y: null }, [true, 'x']] }, __proto__x: 1, empty: {} },
    { order: 'not the entry order', id: 'not the entry id' },
  ];

  /** A commit answers entry views with `deletedAt: null`, as it always did; a select answers entries without it. */
  const asSelected = (entries: Record<string, unknown>[]) =>
    entries.map(({ deletedAt, ...entry }) => {
      expect(deletedAt).toBeNull();
      return entry;
    });

  it('equals a select of every entry, in the default order (order ASC, id DESC)', async () => {
    const ds = (await b.api('POST', `/v1/data-sources?appId=${b.server.bootstrap.appId}`, { json: { name: 'Answer' } })).body.dataSource.id;
    await b.api('POST', `/v1/data-sources/${ds}/data`, { json: { entries: tricky } });
    const committed = await b.api('POST', `/v1/data-sources/${ds}/commit`, { json: { append: true, entries: [{ data: { last: true }, clientId: 'c1' }] } });
    expect(committed.status).toBe(200);
    expect(committed.headers.get('content-type')).toMatch(/^application\/json/);
    const selected = await b.api('POST', `/v1/data-sources/${ds}/data/query`, { json: {} });
    expect(asSelected(committed.body.entries)).toEqual(selected.body.entries);
    expect(committed.body.entries.map((e: { data: unknown }) => e.data)).toEqual([...tricky, { last: true }].map((d) => JSON.parse(JSON.stringify(d))));
    expect(Object.keys(committed.body)).toEqual(['entries', 'clientIds']);
    expect(committed.body.clientIds).toEqual([{ id: committed.body.entries[3].id, clientId: 'c1' }]);
    // Same orders: a reordering commit (without append) gives each entry its index.
    const ids = committed.body.entries.map((e: { id: number }) => e.id).reverse();
    const reordered = await b.api('POST', `/v1/data-sources/${ds}/commit`, { json: { entries: ids.map((id: number) => ({ id, data: { id } })) } });
    expect(reordered.body.entries.map((e: { id: number }) => e.id)).toEqual(ids);
    expect(asSelected(reordered.body.entries)).toEqual((await b.api('POST', `/v1/data-sources/${ds}/data/query`, { json: {} })).body.entries);
  });

  it('answers entries, clientIds and errors in that order, and a replay the same', async () => {
    const ds = (await b.api('POST', `/v1/data-sources?appId=${b.server.bootstrap.appId}`, { json: { name: 'AnswerKeys' } })).body.dataSource.id;
    await b.api('POST', `/v1/data-sources/${ds}/data`, { json: { entries: [{ n: 1 }, { n: 2 }] } });
    // An insert takes order 0: a tie with the first entry, the newer id first.
    expect((await b.api('PUT', `/v1/data-sources/${ds}/data`, { json: { n: 0 } })).status).toBe(201);
    const body = {
      append: true,
      entries: [
        { data: { n: 3 }, clientId: 'c3' },
        { id: 999_999, data: { n: 4 } },
      ],
    };
    const first = await b.api('POST', `/v1/data-sources/${ds}/commit`, { json: body, headers: { 'Idempotency-Key': 'keys-1' } });
    expect(first.status).toBe(200);
    expect(Object.keys(first.body)).toEqual(['entries', 'clientIds', 'errors']);
    expect(first.body.entries.map((e: { data: { n: number } }) => e.data.n)).toEqual([0, 1, 2, 3]);
    expect(first.body.errors).toMatchObject([{ index: 1, id: 999_999, code: 'ENTRY_NOT_FOUND' }]);
    const again = await b.api('POST', `/v1/data-sources/${ds}/commit`, { json: body, headers: { 'Idempotency-Key': 'keys-1' } });
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
  });

  it('hides the columns a rule hides (the answer is built entry by entry then)', async () => {
    const x = b.server.bootstrap;
    const ds = (await b.api('POST', `/v1/data-sources?appId=${x.appId}`, { json: { name: 'AnswerHidden' } })).body.dataSource.id;
    const tokens = (await b.api('GET', `/v1/apps/${x.appId}/tokens`, { token: x.studioToken })).body.tokens as { id: number; kind: string }[];
    const api = tokens.find((t) => t.kind === 'api')!;
    await b.api('PUT', `/v1/data-sources/${ds}`, {
      token: x.studioToken,
      json: { accessRules: [{ type: ['select', 'insert', 'update', 'delete'], allow: { tokens: [api.id] }, exclude: ['salary'] }] },
    });
    const committed = await b.api('POST', `/v1/data-sources/${ds}/commit`, { json: { append: true, entries: [{ data: { name: 'a', salary: 1 } }] } });
    expect(committed.status).toBe(200);
    expect(committed.body.entries.map((e: { data: unknown }) => e.data)).toEqual([{ name: 'a' }]);
  });
});
