import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataSourceConnection } from '../../src/index.js';
import { ENTRY_CACHE_CASES, startTestBackend, type TestBackend } from '../helpers/server.js';

describe.each(ENTRY_CACHE_CASES)('data sources: commit, hooks, log events, concurrency (entry cache $cache)', ({ entryCacheEntries }) => {
  let b: TestBackend;
  const studio = () => b.server.bootstrap.studioToken;
  beforeAll(async () => {
    b = await startTestBackend({ limits: { entryCacheEntries } });
  });
  afterAll(() => b.close());

  async function fresh(name: string): Promise<{ id: number; conn: DataSourceConnection }> {
    const ds = await b.client.DataSources.create({ name });
    return { id: ds.id, conn: await b.client.DataSources.connect(ds.id) };
  }
  const sorted = (entries: { data: Record<string, unknown> }[]) => entries.map((e) => e.data).sort((x, y) => String(x.name).localeCompare(String(y.name)));

  it('inserts and updates, and without append removes the entries not sent; returns the whole data set', async () => {
    const { id, conn } = await fresh('CommitReplace');
    await conn.import([{ name: 'a' }, { name: 'b' }, { name: 'c' }]);
    const [a, b1] = await conn.find({ order: [['data.name', 'ASC']] });
    const res = await b.api('POST', `/v1/data-sources/${id}/commit`, {
      json: { entries: [{ id: a!.id, data: { name: 'a2' } }, { data: { name: 'd' } }] },
    });
    expect(res.status).toBe(200);
    expect(sorted(res.body.entries)).toEqual([{ name: 'a2' }, { name: 'd' }]);
    expect(res.body.entries.find((e: any) => e.id === a!.id).data).toEqual({ name: 'a2' });
    expect(await conn.findById(b1!.id)).toBeNull();
    expect(sorted(await conn.find())).toEqual([{ name: 'a2' }, { name: 'd' }]);
  });

  it('with append keeps unsent entries, removes `delete` ids, and extend merges instead of replacing', async () => {
    const { conn } = await fresh('CommitAppend');
    await conn.import([
      { name: 'a', x: 1 },
      { name: 'b', x: 2 },
      { name: 'c', x: 3 },
    ]);
    const [a, b1, c] = await conn.find({ order: [['data.name', 'ASC']] });
    const replaced = await conn.commit({ append: true, entries: [{ id: a!.id, data: { name: 'a' } }] });
    expect(replaced.entries!.find((e) => e.id === a!.id)!.data).toEqual({ name: 'a' });
    const merged = await conn.commit({ append: true, extend: true, delete: [c!.id], entries: [{ id: b1!.id, data: { y: 9 } }] });
    expect(sorted(merged.entries!)).toEqual([{ name: 'a' }, { name: 'b', x: 2, y: 9 }]);
    expect(await conn.findById(c!.id)).toBeNull();
  });

  it('echoes clientIds, and returns {} with returnEntries: false', async () => {
    const { conn } = await fresh('CommitClientIds');
    const result = await conn.commit({
      append: true,
      returnEntries: false,
      entries: [{ data: { n: 1 }, clientId: 'tmp-1' }, { data: { n: 2 } }, { data: { n: 3 }, clientId: 7 }],
    });
    expect(result.entries).toBeUndefined();
    const all = await conn.find();
    const byN = (n: number) => all.find((e) => e.data.n === n)!.id;
    expect(result.clientIds).toEqual([
      { id: byN(1), clientId: 'tmp-1' },
      { id: byN(3), clientId: 7 },
    ]);
  });

  it('is all or nothing for a malformed body: a bad element refuses the whole commit (400) and nothing changes', async () => {
    const { id, conn } = await fresh('CommitAtomic');
    await conn.import([{ name: 'keep' }]);
    const before = await conn.find();
    const cases: [unknown, number, string][] = [
      [{ entries: 'x' }, 400, 'entries'],
      [{}, 400, 'entries'],
      [{ entries: [{ data: { name: 'new' } }, { data: 5 }] }, 400, 'entries[1].data'],
      [{ entries: [{ data: { name: 'new' } }, { id: 'x', data: {} }] }, 400, 'entries[1].id'],
      [{ entries: [{ data: { name: 'new' } }], runHooks: ['delete'] }, 400, 'runHooks'],
      [{ entries: [{ data: { name: 'new' } }], append: 'yes' }, 400, 'append'],
      [{ entries: [], delete: [before[0]!.id] }, 400, 'delete'], // delete needs append: true
    ];
    for (const [json, status, field] of cases) {
      const res = await b.api('POST', `/v1/data-sources/${id}/commit`, { json });
      expect(res.status, JSON.stringify(json)).toBe(status);
      expect(res.body.error.message).toContain(field);
    }
    expect(await conn.find()).toEqual(before);
    expect(await conn.versions()).toHaveLength(1); // only the import's snapshot
  });

  it('20 concurrent commits and 20 concurrent inserts on one data source lose nothing', async () => {
    const { conn } = await fresh('Concurrent');
    const commits = Array.from({ length: 20 }, (_, i) =>
      conn.commit({ append: true, returnEntries: false, entries: Array.from({ length: 5 }, (_, k) => ({ data: { name: `c${i}-${k}` } })) }),
    );
    const inserts = Array.from({ length: 20 }, (_, i) => conn.insert({ name: `i${i}` }));
    await Promise.all([...commits, ...inserts]);
    const all = await conn.find();
    expect(all).toHaveLength(120);
    const names = new Set(all.map((e) => e.data.name));
    for (let i = 0; i < 20; i++) {
      expect(names.has(`i${i}`)).toBe(true);
      for (let k = 0; k < 5; k++) expect(names.has(`c${i}-${k}`)).toBe(true);
    }
    expect(new Set(all.map((e) => e.id)).size).toBe(120);
  });

  describe('hooks', () => {
    let hookServer: Server;
    let hookUrl: string;
    const received: any[] = [];
    beforeAll(async () => {
      hookServer = createServer((req, res) => {
        let body = '';
        req.on('data', (chunk) => (body += chunk));
        req.on('end', () => {
          received.push({ path: req.url, headers: req.headers, body: JSON.parse(body) });
          res.statusCode = req.url === '/fail' ? 500 : 200;
          res.end('ok');
        });
      });
      await new Promise<void>((r) => hookServer.listen(0, '127.0.0.1', () => r()));
      hookUrl = `http://127.0.0.1:${(hookServer.address() as AddressInfo).port}`;
    });
    afterAll(() => new Promise<void>((r) => hookServer.close(() => r())));

    const waitFor = async (predicate: () => boolean) => {
      for (let i = 0; i < 100 && !predicate(); i++) await new Promise((r) => setTimeout(r, 20));
      expect(predicate()).toBe(true);
    };

    it('operations hooks transform fields before saving (trim, lower, upper, templates, conditions)', async () => {
      const { id, conn } = await fresh('OpsHooks');
      await b.studio.DataSources.update(id, {
        hooks: [
          { type: 'operations', runOn: ['beforeSave'], payload: { email: 'lower', name: 'trim', code: 'upper' } },
          { type: 'operations', runOn: ['insert'], payload: { full: '{{first}} {{last}}' } },
          // `data.status` is the column `status`, as in a query's where.
          { type: 'operations', runOn: ['update'], conditions: [{ 'data.status': 'vip' }], payload: { badge: { template: 'VIP {{first}}' } } },
        ],
      });
      const entry = await conn.insert({ email: 'Ann@Example.COM', name: '  Ann ', code: 'ab1', first: 'Ann', last: 'Lee' });
      expect(entry.data).toEqual({ email: 'ann@example.com', name: 'Ann', code: 'AB1', first: 'Ann', last: 'Lee', full: 'Ann Lee' });
      const plain = await conn.update(entry.id, { first: 'Anna', email: 'X@Y.Z' });
      expect(plain.data).toMatchObject({ email: 'x@y.z', full: 'Ann Lee' });
      expect(plain.data).not.toHaveProperty('badge');
      const vip = await conn.update(entry.id, { status: 'vip' });
      expect(vip.data.badge).toBe('VIP Anna');
      // stored as transformed
      expect((await conn.findById(entry.id))!.data).toEqual(vip.data);
    });

    it('commit runs only the hook kinds listed in runHooks', async () => {
      const { id, conn } = await fresh('CommitHooks');
      await b.studio.DataSources.update(id, {
        hooks: [
          { type: 'operations', runOn: ['insert'], payload: { name: 'upper' } },
          { type: 'operations', runOn: ['update'], payload: { name: 'lower' } },
        ],
      });
      const none = await conn.commit({ append: true, entries: [{ data: { name: 'Plain' } }] });
      expect(none.entries!.map((e) => e.data.name)).toEqual(['Plain']);
      const ins = await conn.commit({
        append: true,
        runHooks: ['insert'],
        entries: [{ data: { name: 'Loud' } }, { id: none.entries![0]!.id, data: { name: 'KeepCase' } }],
      });
      expect(ins.entries!.map((e) => e.data.name).sort()).toEqual(['KeepCase', 'LOUD']);
      const upd = await conn.commit({ append: true, runHooks: ['update'], entries: [{ id: none.entries![0]!.id, data: { name: 'QUIET' } }] });
      expect(upd.entries!.find((e) => e.id === none.entries![0]!.id)!.data.name).toBe('quiet');
    });

    it('web hooks POST the saved entry after the write; failures are logged and never lose the write', async () => {
      const { id, conn } = await fresh('WebHooks');
      await b.studio.DataSources.update(id, {
        hooks: [
          { type: 'web', runOn: ['insert'], payload: { url: `${hookUrl}/ok`, headers: { 'X-Secret': 's3' } } },
          { type: 'web', runOn: ['update'], payload: { url: `${hookUrl}/fail` } },
          { type: 'web', runOn: ['insert'], conditions: [{ vip: true }], payload: { url: `${hookUrl}/vip` } },
          { type: 'web', runOn: ['insert'], payload: { url: 'http://127.0.0.1:1/refused' } },
        ],
      });
      const entry = await conn.insert({ name: 'Ann' });
      await waitFor(() => received.some((r) => r.path === '/ok' && r.body.entry.id === entry.id));
      const call = received.find((r) => r.path === '/ok' && r.body.entry.id === entry.id);
      expect(call.headers['x-secret']).toBe('s3');
      expect(call.body).toMatchObject({ event: 'insert', dataSource: { id, name: 'WebHooks' }, entry: { id: entry.id, data: { name: 'Ann' } } });
      expect(received.some((r) => r.path === '/vip')).toBe(false);
      await conn.update(entry.id, { name: 'Bo' });
      await waitFor(() => received.some((r) => r.path === '/fail'));
      expect((await conn.findById(entry.id))!.data.name).toBe('Bo');
      let failures: any[] = [];
      await waitFor(() => {
        void b.api('GET', `/v1/data-sources/${id}/logs?type=dataSource.hook.failed`, { token: studio() }).then((r) => (failures = r.body.logs));
        return failures.length >= 2;
      });
      expect(failures.map((f) => f.data.url).sort()).toEqual([`${hookUrl}/fail`, 'http://127.0.0.1:1/refused'].sort());
      expect(failures.every((f) => typeof f.data.error === 'string' && f.data.error.length > 0)).toBe(true);
    });
  });

  it('writes a log record for every entry create, update and delete', async () => {
    const { id, conn } = await fresh('Logged');
    const entry = await conn.insert({ a: 1, b: 2 });
    await conn.update(entry.id, { b: 3 });
    const committed = await conn.commit({ append: true, entries: [{ data: { c: 1 } }] });
    await conn.removeById(entry.id);
    const res = await b.api('GET', `/v1/data-sources/${id}/logs`, { token: studio() });
    expect(res.status).toBe(200);
    const logs = res.body.logs.filter((l: any) => l.type.startsWith('dataSource.entry.')).reverse();
    const other = committed.entries!.find((e) => e.id !== entry.id)!;
    expect(logs.map((l: any) => [l.type, l.dataSourceEntryId, l.data.columns])).toEqual([
      ['dataSource.entry.create', entry.id, ['a', 'b']],
      ['dataSource.entry.update', entry.id, ['b']],
      ['dataSource.entry.create', other.id, ['c']],
      ['dataSource.entry.delete', entry.id, ['a', 'b']],
    ]);
    for (const log of logs) {
      expect(log).toMatchObject({ appId: b.server.bootstrap.appId, organizationId: b.server.bootstrap.organizationId, dataSourceId: id });
      expect(log.createdAt).toMatch(/^\d{4}-/);
    }
    // API tokens may not read logs
    expect((await b.api('GET', `/v1/data-sources/${id}/logs`)).status).toBe(403);
  });
});
