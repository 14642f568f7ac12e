import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Bootstrap } from '../../src/server/index.js';
import { ENTRY_CACHE_CASES, startTestBackend, type TestBackend } from '../helpers/server.js';

/**
 * Commits that converge (issue 16, item 7): a sync client lists, then commits from a list that went stale, or
 * re-sends a commit whose answer it lost. Deleting a gone id is a no-op, updating one is reported per item while
 * the rest applies, and an Idempotency-Key makes a re-sent commit apply once (per token and data source).
 */
describe.each(ENTRY_CACHE_CASES)('commits that converge (entry cache $cache)', ({ entryCacheEntries }) => {
  let b: TestBackend;
  let x: Bootstrap;
  let foreign: Bootstrap;
  let now = Date.parse('2030-01-01T00:00:00Z');
  beforeAll(async () => {
    b = await startTestBackend({ clock: () => now, limits: { entryCacheEntries } });
    x = b.server.bootstrap;
    foreign = await b.server.createOrganization('Foreign');
  });
  afterAll(() => b?.close());

  type Entry = { id: number; data: Record<string, unknown> };
  const create = async (name: string, token = x.apiToken) => {
    const res = await b.api('POST', '/v1/data-sources', { token, json: { name, appId: token === x.apiToken ? x.appId : foreign.appId } });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body.dataSource.id as number;
  };
  const list = async (id: number, token = x.apiToken): Promise<Entry[]> => (await b.api('GET', `/v1/data-sources/${id}/data`, { token })).body.entries;
  const byKey = (entries: Entry[]) => Object.fromEntries(entries.map((e) => [String(e.data.key), e.data]));
  const commit = (id: number, json: unknown, headers: Record<string, string> = {}, token = x.apiToken) =>
    b.api('POST', `/v1/data-sources/${id}/commit`, { token, json, headers });

  it('a sync run from a stale list stores exactly what was intended', async () => {
    const id = await create('Sync target');
    await b.api('POST', `/v1/data-sources/${id}/data`, {
      json: { entries: ['a', 'b', 'c', 'd', 'e'].map((key) => ({ key, v: 0 })) },
    });
    // 1. The sync client lists the remote entries.
    const listed = await list(id);
    const remote = Object.fromEntries(listed.map((e) => [String(e.data.key), e.id]));

    // 2. Meanwhile another writer deletes a and e, and changes b.
    await b.api('DELETE', `/v1/data-sources/${id}/data/${remote.a}`);
    await b.api('DELETE', `/v1/data-sources/${id}/data/${remote.e}`);
    await b.api('PUT', `/v1/data-sources/${id}/data/${remote.b}`, { json: { other: true } });

    // 3. The client commits from its stale list: updates a (gone), b, c; inserts f, g; deletes d and e (gone).
    const body = {
      append: true,
      entries: [
        { id: remote.a, data: { key: 'a', v: 1 }, clientId: 'row-a' },
        { id: remote.b, data: { key: 'b', v: 1 } },
        { data: { key: 'f', v: 1 }, clientId: 'row-f' },
        { id: remote.c, data: { key: 'c', v: 1 } },
        { data: { key: 'g', v: 1 } },
      ],
      delete: [remote.d, remote.e],
    };
    const res = await commit(id, body);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.errors).toEqual([
      { index: 0, id: remote.a, clientId: 'row-a', code: 'ENTRY_NOT_FOUND', message: expect.stringContaining(`entry ${remote.a} not found`) },
    ]);
    // The answer is the whole data set, as stored.
    expect(byKey(res.body.entries)).toEqual({ b: { key: 'b', v: 1 }, c: { key: 'c', v: 1 }, f: { key: 'f', v: 1 }, g: { key: 'g', v: 1 } });
    expect(res.body.clientIds).toEqual([{ id: expect.any(Number), clientId: 'row-f' }]);

    // 4. The stored entries are exactly what the client intended, given what changed meanwhile.
    const stored = await list(id);
    expect(byKey(stored)).toEqual({ b: { key: 'b', v: 1 }, c: { key: 'c', v: 1 }, f: { key: 'f', v: 1 }, g: { key: 'g', v: 1 } });
    expect(stored.find((e) => e.data.key === 'b')!.id).toBe(remote.b);
    expect(stored.find((e) => e.data.key === 'f')!.id).toBe(res.body.clientIds[0].id);

    // 5. The next run from a fresh list has nothing left to fix: re-sending the same stale body without a key
    // inserts f and g again (no key, no memory) but still never fails on the gone ids.
    const again = await commit(id, { append: true, entries: [{ id: remote.a, data: { key: 'a' } }], delete: [remote.d] });
    expect(again.status).toBe(200);
    expect(again.body.errors).toHaveLength(1);
    expect(await list(id)).toEqual(stored);
  });

  it('without append, a stale update is reported and the rest replaces the data set', async () => {
    const id = await create('Replace target');
    await b.api('POST', `/v1/data-sources/${id}/data`, { json: { entries: [{ key: 'a' }, { key: 'b' }] } });
    const [a, bEntry] = await list(id);
    await b.api('DELETE', `/v1/data-sources/${id}/data/${a!.id}`);
    const res = await commit(id, { entries: [{ id: a!.id, data: { key: 'a2' } }, { id: bEntry!.id, data: { key: 'b2' } }, { data: { key: 'c' } }] });
    expect(res.status).toBe(200);
    expect(res.body.errors.map((e: { index: number }) => e.index)).toEqual([0]);
    expect(byKey(await list(id))).toEqual({ b2: { key: 'b2' }, c: { key: 'c' } });
  });

  it('a malformed body is still refused whole (400) and changes nothing', async () => {
    const id = await create('Malformed');
    await b.api('POST', `/v1/data-sources/${id}/data`, { json: { entries: [{ key: 'a' }] } });
    const before = await list(id);
    const res = await commit(id, { append: true, entries: [{ data: { key: 'new' } }, { id: 'x', data: {} }] }, { 'Idempotency-Key': 'malformed-1' });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error: { code: 'INVALID_FIELD' }, message: expect.stringContaining('entries[1].id') });
    expect(await list(id)).toEqual(before);
    // The refused request left no receipt: the same key with a good body applies.
    expect((await commit(id, { append: true, entries: [{ data: { key: 'new' } }] }, { 'Idempotency-Key': 'malformed-1' })).status).toBe(200);
    expect(await list(id)).toHaveLength(2);
  });

  it('a re-sent commit with the same Idempotency-Key applies once, and is answered again with the data set as it is', async () => {
    const id = await create('Idempotent');
    const body = {
      append: true,
      entries: [
        { data: { key: 'x' }, clientId: 'cx' },
        { id: 999_999, data: { key: 'gone' } },
      ],
    };
    const first = await commit(id, body, { 'Idempotency-Key': 'sync-run-1' });
    expect(first.status).toBe(200);
    expect(first.headers.get('Idempotent-Replayed')).toBeNull();
    await b.api('PUT', `/v1/data-sources/${id}/data`, { json: { key: 'later' } });

    const second = await commit(id, body, { 'Idempotency-Key': 'sync-run-1' });
    expect(second.status).toBe(200);
    expect(second.headers.get('Idempotent-Replayed')).toBe('true');
    expect(second.body.clientIds).toEqual(first.body.clientIds);
    expect(second.body.errors).toEqual(first.body.errors);
    expect(second.body.entries.map((e: Entry) => e.data.key).sort()).toEqual(['later', 'x']);
    expect((await list(id)).map((e) => e.data.key).sort()).toEqual(['later', 'x']);
    const versions = (await b.api('GET', `/v1/data-sources/${id}/versions`)).body.versions as { data: { action: string } }[];
    expect(versions.filter((v) => v.data.action === 'commit')).toHaveLength(1);

    // Another body under the same key: refused, nothing applied.
    const other = await commit(id, { append: true, entries: [{ data: { key: 'y' } }] }, { 'Idempotency-Key': 'sync-run-1' });
    expect(other.status).toBe(409);
    expect(other.body.error.code).toBe('IDEMPOTENCY_KEY_REUSED');
    expect((await list(id)).map((e) => e.data.key)).not.toContain('y');
    const long = await commit(id, body, { 'Idempotency-Key': 'k'.repeat(201) });
    expect(long.status).toBe(400);
    expect(long.body.error.code).toBe('INVALID_HEADER');
  });

  it('concurrent re-sends with one key apply once', async () => {
    const id = await create('Concurrent keys');
    const body = { append: true, returnEntries: false, entries: [{ data: { key: 'once' } }] };
    const answers = await Promise.all(Array.from({ length: 6 }, () => commit(id, body, { 'Idempotency-Key': 'burst' })));
    for (const answer of answers) expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(await list(id)).toHaveLength(1);
    expect(answers.filter((a) => a.headers.get('Idempotent-Replayed') === 'true')).toHaveLength(5);
  });

  it('a key belongs to one token and one data source: another token or data source applies its own commit', async () => {
    const one = await create('Key scope 1');
    const two = await create('Key scope 2');
    const second = (await b.api('POST', `/v1/apps/${x.appId}/tokens`, { token: x.studioToken, json: { name: 'Second sync' } })).body.token.token as string;
    const body = { append: true, entries: [{ data: { key: 'k' } }] };
    expect((await commit(one, body, { 'Idempotency-Key': 'shared' })).headers.get('Idempotent-Replayed')).toBeNull();
    expect((await commit(two, body, { 'Idempotency-Key': 'shared' })).headers.get('Idempotent-Replayed')).toBeNull();
    expect((await commit(one, body, { 'Idempotency-Key': 'shared' }, second)).headers.get('Idempotent-Replayed')).toBeNull();
    expect(await list(one)).toHaveLength(2);
    expect(await list(two)).toHaveLength(1);

    // Another tenant using the same key on our data source learns nothing (refused), and on its own applies its own.
    const theirs = await create('Foreign target', foreign.apiToken);
    const intrude = await commit(one, body, { 'Idempotency-Key': 'shared' }, foreign.apiToken);
    expect([403, 404]).toContain(intrude.status);
    expect(intrude.body.entries).toBeUndefined();
    const own = await commit(theirs, body, { 'Idempotency-Key': 'shared' }, foreign.apiToken);
    expect(own.status).toBe(200);
    expect(own.headers.get('Idempotent-Replayed')).toBeNull();
    expect(own.body.entries.map((e: Entry) => e.data)).toEqual([{ key: 'k' }]);
    expect(await list(one)).toHaveLength(2);
  });

  it('keys are forgotten after a day: a commit re-sent later applies again', async () => {
    const id = await create('Key lifetime');
    const body = { append: true, returnEntries: false, entries: [{ data: { key: 'day' } }] };
    await commit(id, body, { 'Idempotency-Key': 'daily' });
    now += 23 * 3_600_000;
    await b.server.tick();
    expect((await commit(id, body, { 'Idempotency-Key': 'daily' })).headers.get('Idempotent-Replayed')).toBe('true');
    now += 2 * 3_600_000;
    await b.server.tick();
    expect((await commit(id, body, { 'Idempotency-Key': 'daily' })).headers.get('Idempotent-Replayed')).toBeNull();
    expect(await list(id)).toHaveLength(2);
  });

  it('works through the client library: errors per item, idempotencyKey', async () => {
    const id = await create('Client commit');
    const conn = await b.client.DataSources.connect(id);
    const [kept] = [await conn.insert({ key: 'kept' })];
    const result = await conn.commit(
      {
        append: true,
        entries: [{ id: 987_654, data: { key: 'gone' } }, { id: kept.id, data: { key: 'kept', v: 2 } }, { data: { key: 'new' } }],
        delete: [876_543],
      },
      { idempotencyKey: 'client-1' },
    );
    expect(result.errors).toEqual([expect.objectContaining({ index: 0, id: 987_654, code: 'ENTRY_NOT_FOUND' })]);
    const repeat = await conn.commit(
      {
        append: true,
        entries: [{ id: 987_654, data: { key: 'gone' } }, { id: kept.id, data: { key: 'kept', v: 2 } }, { data: { key: 'new' } }],
        delete: [876_543],
      },
      { idempotencyKey: 'client-1' },
    );
    expect(repeat.errors).toEqual(result.errors);
    expect((await conn.find()).map((e) => e.data).sort((p, q) => String(p.key).localeCompare(String(q.key)))).toEqual([{ key: 'kept', v: 2 }, { key: 'new' }]);
    await expect(conn.commit({ entries: [] }, { idempotencyKey: '' })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });
});
