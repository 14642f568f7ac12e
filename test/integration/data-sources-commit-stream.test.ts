import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestBackend, type TestBackend } from '../helpers/server.js';

/**
 * Issue 14, "big answers are streamed, not materialised": the answer of a commit (and the list of every entry) on a
 * data set the entry cache does not hold is written in pages, read after the commit from rows the database kept as
 * the commit left them (docs/data-sources.md, "Streamed answers"). Later writes do not reach it, and a client that
 * stops reading frees what it held.
 */
describe('data sources: streamed answers', () => {
  let b: TestBackend;
  const N = 20_000;
  const pad = 'x'.repeat(400);
  beforeAll(async () => {
    b = await startTestBackend({ limits: { entryCacheEntries: 0 } });
  });
  afterAll(() => b?.close());

  const post = (path: string, json: unknown, signal?: AbortSignal) =>
    fetch(b.url + path, {
      method: 'POST',
      headers: { 'Auth-token': b.server.bootstrap.apiToken, 'Content-Type': 'application/json' },
      body: JSON.stringify(json),
      signal,
    });

  const createWithEntries = async (name: string) => {
    const ds = (await b.api('POST', `/v1/data-sources?appId=${b.server.bootstrap.appId}`, { json: { name } })).body.dataSource.id as number;
    const entries = Array.from({ length: N }, (_, i) => ({ i, pad }));
    expect((await b.api('POST', `/v1/data-sources/${ds}/data`, { json: { entries } })).status).toBe(200);
    return ds;
  };

  it('answers the data set this commit produced, even when writes land before the client reads it', async () => {
    const ds = await createWithEntries('Streamed');
    const res = await post(`/v1/data-sources/${ds}/commit`, { append: true, entries: [{ data: { i: N, pad }, clientId: 'last' }] });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    // Written in pieces: no length known up front.
    expect(res.headers.get('content-length')).toBeNull();
    // Before the answer (about 9 MB) is read: the data set is replaced by one entry.
    const replaced = await b.api('POST', `/v1/data-sources/${ds}/commit`, { json: { entries: [{ data: { replaced: true } }] } });
    expect(replaced.status).toBe(200);
    expect(replaced.body.entries.map((e: { data: unknown }) => e.data)).toEqual([{ replaced: true }]);
    const body = JSON.parse(await res.text());
    expect(Object.keys(body)).toEqual(['entries', 'clientIds']);
    expect(body.entries).toHaveLength(N + 1);
    // The default order: `order` ASC (0 … N), the import's entries then the committed one.
    expect(body.entries.map((e: { data: { i: number } }) => e.data.i)).toEqual(Array.from({ length: N + 1 }, (_, i) => i));
    expect(body.entries[N]).toMatchObject({ dataSourceId: ds, data: { i: N, pad }, order: N, deletedAt: null });
    expect(body.clientIds).toEqual([{ id: body.entries[N].id, clientId: 'last' }]);
  }, 120_000);

  it('a full replacement of a data set larger than the entry cache reads the entries it leaves out in pages', async () => {
    const ds = (await b.api('POST', `/v1/data-sources?appId=${b.server.bootstrap.appId}`, { json: { name: 'Replaced' } })).body.dataSource.id as number;
    // 4,500 entries, three pages of 2,000: the kept ones and the left-out ones are on every page.
    const entries = Array.from({ length: 4_500 }, (_, i) => (i % 2 ? { i, odd: true } : { i }));
    expect((await b.api('POST', `/v1/data-sources/${ds}/data`, { json: { entries } })).status).toBe(200);
    const before = (await b.api('GET', `/v1/data-sources/${ds}/data`)).body.entries as { id: number; data: { i: number } }[];
    const kept = before.filter((e) => e.data.i % 5 !== 0); // 900 left out, on every page
    const res = await b.api('POST', `/v1/data-sources/${ds}/commit`, {
      json: { entries: [...kept.map((e) => ({ id: e.id, data: { ...e.data, kept: true } })), { data: { added: true } }] },
    });
    expect(res.status).toBe(200);
    expect(res.body.entries.map((e: { data: unknown }) => e.data)).toEqual([...kept.map((e) => ({ ...e.data, kept: true })), { added: true }]);
    const logs = await b.api('GET', `/v1/data-sources/${ds}/logs?type=dataSource.entry.delete&limit=1000`, { token: b.server.bootstrap.studioToken });
    const deletes = (logs.body.logs as { dataSourceEntryId: number; data: { columns: string[] } }[]).reverse();
    const keptIds = new Set(kept.map((e) => e.id));
    const left = before.filter((e) => !keptIds.has(e.id)).sort((x, y) => x.id - y.id);
    expect(deletes.map((l) => l.dataSourceEntryId)).toEqual(left.map((e) => e.id));
    expect(deletes.map((l) => l.data.columns)).toEqual(left.map((e) => Object.keys(e.data)));
    // The version taken before the commit holds the whole data set.
    const versions = await b.api('GET', `/v1/data-sources/${ds}/versions`);
    expect(versions.body.versions[0].data).toMatchObject({ action: 'commit', columns: ['i', 'odd'], entries: { count: 4_500 } });
  }, 120_000);

  it('frees what an answer held when the client stops reading it', async () => {
    const ds = await createWithEntries('Abandoned');
    // More abandoned answers than the PostgreSQL pool has connections (10): each must give its own back.
    for (let k = 0; k < 12; k++) {
      const abort = new AbortController();
      const res = await post(`/v1/data-sources/${ds}/commit`, { append: true, entries: [{ data: { k } }] }, abort.signal);
      expect(res.status).toBe(200);
      const reader = res.body!.getReader();
      expect((await reader.read()).done).toBe(false);
      abort.abort();
      await reader.cancel().catch(() => undefined);
    }
    const last = await post(`/v1/data-sources/${ds}/commit`, { append: true, entries: [{ data: { k: 12 } }] });
    const body = JSON.parse(await last.text());
    expect(body.entries).toHaveLength(N + 13);
    expect(body.entries.slice(N).map((e: { data: { k: number } }) => e.data.k)).toEqual(Array.from({ length: 13 }, (_, k) => k));
  }, 120_000);

  it('lists every entry (GET …/data) in pages, as a select of every entry answers them', async () => {
    const ds = await createWithEntries('Listed');
    const res = await fetch(`${b.url}/v1/data-sources/${ds}/data`, { headers: { 'Auth-token': b.server.bootstrap.apiToken } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.headers.get('content-length')).toBeNull();
    // A write before the list is read does not reach it.
    expect((await b.api('PUT', `/v1/data-sources/${ds}/data`, { json: { late: true } })).status).toBe(201);
    const listed = JSON.parse(await res.text());
    expect(Object.keys(listed)).toEqual(['entries']);
    expect(listed.entries).toHaveLength(N);
    const selected = await b.api('POST', `/v1/data-sources/${ds}/data/query`, { json: { where: { late: { $exists: false } } } });
    expect(selected.body.entries).toHaveLength(N);
    expect(listed.entries).toEqual(selected.body.entries);
  }, 120_000);

  it('writes the bytes JSON.stringify writes for the unstreamed answer, across pages', async () => {
    const ds = (await b.api('POST', `/v1/data-sources?appId=${b.server.bootstrap.appId}`, { json: { name: 'Bytes' } })).body.dataSource.id as number;
    // Values whose JSON text is easy to get wrong: escapes, control and non-ASCII characters, numbers JSON writes
    // in exponent form, nesting; 4,500 entries, so the answer spans three pages.
    const odd = ['"quoted" \\ back\\slash', 'tab\tnew\nline\u0001\u001f', 'é ü 中文 😀', '\u2028\u2029 </script>', ''];
    const data = (i: number) => ({ i, s: odd[i % odd.length], n: [1e21, 0.1, -0, 5e-7, -12.5][i % 5], deep: { a: [i, null, true, { b: 'x' }] } });
    expect((await b.api('POST', `/v1/data-sources/${ds}/data`, { json: { entries: Array.from({ length: 4_500 }, (_, i) => data(i)) } })).status).toBe(200);
    // The unstreamed answers' keys, in their order: toView (a commit) and a select's entry.
    const view = (e: Record<string, unknown>, deletedAt: boolean) => ({
      id: e.id,
      dataSourceId: e.dataSourceId,
      data: e.data,
      order: e.order,
      createdAt: e.createdAt,
      updatedAt: e.updatedAt,
      ...(deletedAt ? { deletedAt: null } : {}),
    });
    const res = await post(`/v1/data-sources/${ds}/commit`, { append: true, entries: [{ data: data(4_500), clientId: 'c' }] });
    expect(res.headers.get('content-length')).toBeNull();
    const text = await res.text();
    const body = JSON.parse(text);
    expect(body.entries.map((e: { data: unknown }) => e.data)).toEqual(Array.from({ length: 4_501 }, (_, i) => JSON.parse(JSON.stringify(data(i)))));
    expect(text).toBe(JSON.stringify({ entries: body.entries.map((e: Record<string, unknown>) => view(e, true)), clientIds: body.clientIds }));
    const listed = await fetch(`${b.url}/v1/data-sources/${ds}/data`, { headers: { 'Auth-token': b.server.bootstrap.apiToken } });
    expect(listed.headers.get('content-length')).toBeNull();
    const listText = await listed.text();
    expect(listText).toBe(JSON.stringify({ entries: body.entries.map((e: Record<string, unknown>) => view(e, false)) }));
    // No entry: no page.
    const empty = (await b.api('POST', `/v1/data-sources?appId=${b.server.bootstrap.appId}`, { json: { name: 'Empty' } })).body.dataSource.id as number;
    const none = await fetch(`${b.url}/v1/data-sources/${empty}/data`, { headers: { 'Auth-token': b.server.bootstrap.apiToken } });
    expect(await none.text()).toBe('{"entries":[]}');
    const committed = await post(`/v1/data-sources/${empty}/commit`, { append: true, entries: [] });
    expect(await committed.text()).toBe('{"entries":[]}');
  }, 120_000);

  it('leaves out the columns a rule hides, page by page', async () => {
    const x = b.server.bootstrap;
    const ds = (await b.api('POST', `/v1/data-sources?appId=${x.appId}`, { json: { name: 'ListedHidden' } })).body.dataSource.id;
    const tokens = (await b.api('GET', `/v1/apps/${x.appId}/tokens`, { token: x.studioToken })).body.tokens as { id: number; kind: string }[];
    const api = tokens.find((t) => t.kind === 'api')!;
    const entries = Array.from({ length: 5_000 }, (_, i) => ({ i, salary: i * 10 }));
    expect((await b.api('POST', `/v1/data-sources/${ds}/data`, { json: { entries } })).status).toBe(200);
    await b.api('PUT', `/v1/data-sources/${ds}`, {
      token: x.studioToken,
      json: { accessRules: [{ type: ['select', 'insert', 'update', 'delete'], allow: { tokens: [api.id] }, exclude: ['salary'] }] },
    });
    const listed = await b.api('GET', `/v1/data-sources/${ds}/data`);
    expect(listed.body.entries.map((e: { data: unknown }) => e.data)).toEqual(entries.map(({ i }) => ({ i })));
    const committed = await b.api('POST', `/v1/data-sources/${ds}/commit`, { json: { append: true, entries: [{ data: { i: 5_000, salary: 1 } }] } });
    expect(committed.body.entries.map((e: { data: unknown }) => e.data)).toEqual([...entries.map(({ i }) => ({ i })), { i: 5_000 }]);
  }, 120_000);
});

describe('data sources: a streamed answer the client stops taking', () => {
  let b: TestBackend;
  beforeAll(async () => {
    b = await startTestBackend({ limits: { entryCacheEntries: 0, answerStallMs: 1000 } });
  });
  afterAll(() => b?.close());

  it('is cut after limits.answerStallMs, and what it held is freed', async () => {
    const ds = (await b.api('POST', `/v1/data-sources?appId=${b.server.bootstrap.appId}`, { json: { name: 'Stalled' } })).body.dataSource.id as number;
    const entries = Array.from({ length: 20_000 }, (_, i) => ({ i, pad: 'x'.repeat(400) }));
    expect((await b.api('POST', `/v1/data-sources/${ds}/data`, { json: { entries } })).status).toBe(200);
    // More stalled answers than the PostgreSQL pool has connections (10), none closed by its client.
    const readers: ReadableStreamDefaultReader<Uint8Array>[] = [];
    for (let k = 0; k < 11; k++) {
      const res = await fetch(`${b.url}/v1/data-sources/${ds}/data`, { headers: { 'Auth-token': b.server.bootstrap.apiToken } });
      expect(res.status).toBe(200);
      const reader = res.body!.getReader();
      expect((await reader.read()).done).toBe(false);
      readers.push(reader);
    }
    await new Promise((resolve) => setTimeout(resolve, 3000));
    // Each was cut: reading on ends in an error, not in a complete answer.
    for (const reader of readers) {
      const rest = (async () => {
        for (;;) if ((await reader.read()).done) return 'complete';
      })();
      await expect(rest).rejects.toThrow();
    }
    // And what they held was given back: a commit answers in full.
    const committed = await b.api('POST', `/v1/data-sources/${ds}/commit`, { json: { append: true, entries: [{ data: { i: 20_000 } }] } });
    expect(committed.status).toBe(200);
    expect(committed.body.entries).toHaveLength(20_001);
  }, 120_000);
});
