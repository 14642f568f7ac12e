import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestBackend, type TestBackend } from '../helpers/server.js';

/**
 * Issue 14, "writes cost what they change": without the entry cache (`entryCacheEntries: 0`, as for a data source
 * larger than its budget), an append remembers the data set's count, columns and next order (summary.ts), and a
 * single-entry update or delete moves that memo on instead of leaving the next append commit to read every entry.
 * The columns are every key in entry order, first seen first, so each move must give what reading every entry
 * gives: after each write below, an append commit records the data set's count and columns in its version, and
 * the entry it appends gets the next order; both are checked against the entries as they are.
 */
describe('the data set summary after single-entry writes (entry cache off)', () => {
  let b: TestBackend;
  let ds: number;
  beforeAll(async () => {
    b = await startTestBackend({ limits: { entryCacheEntries: 0 } });
    ds = (await b.api('POST', `/v1/data-sources?appId=${b.server.bootstrap.appId}`, { json: { name: 'Summary' } })).body.dataSource.id;
  });
  afterAll(() => b?.close());

  type Entry = { id: number; order: number; data: Record<string, unknown> };
  const entries = async (): Promise<Entry[]> => {
    const r = await b.api('GET', `/v1/data-sources/${ds}/data`);
    expect(r.status).toBe(200);
    return (r.body.entries as Entry[]).sort((x, y) => x.id - y.id);
  };
  /** What reading every entry gives: the keys in entry (id) order, first seen first. */
  const columnsOf = (list: Entry[]) => [...new Set(list.flatMap((e) => Object.keys(e.data)))];

  /** An append commit of one entry: its version must record the data set as it was, its entry the next order. */
  async function appendAndCheck(tag: number): Promise<void> {
    const before = await entries();
    const r = await b.api('POST', `/v1/data-sources/${ds}/commit`, { json: { append: true, returnEntries: false, entries: [{ data: { a: tag } }] } });
    expect(r.status).toBe(200);
    const versions = (await b.api('GET', `/v1/data-sources/${ds}/versions`)).body.versions as {
      id: number;
      data: { columns: string[]; entries: { count: number } };
    }[];
    const newest = versions.reduce((x, y) => (y.id > x.id ? y : x));
    expect({ count: newest.data.entries.count, columns: newest.data.columns }).toEqual({ count: before.length, columns: columnsOf(before) });
    const after = await entries();
    const added = after.find((e) => !before.some((x) => x.id === e.id))!;
    expect(added.order).toBe(before.length === 0 ? 0 : Math.max(...before.map((e) => e.order)) + 1);
  }
  const update = async (id: number, data: Record<string, unknown>) =>
    expect((await b.api('PUT', `/v1/data-sources/${ds}/data/${id}`, { json: data })).status).toBe(201);
  const remove = async (id: number) => expect((await b.api('DELETE', `/v1/data-sources/${ds}/data/${id}`)).status).toBeLessThan(300);

  it('update and delete of the oldest, a middle and the newest entry keep count, columns and next order exact', async () => {
    const first = await b.api('POST', `/v1/data-sources/${ds}/commit`, {
      json: { append: true, returnEntries: false, entries: [{ data: { a: 1, b: 1, c: 1 } }, { data: { a: 2 } }, { data: { a: 3, d: 3 } }] },
    });
    expect(first.status).toBe(200);
    await appendAndCheck(10);
    let [e1, e2, e3] = await entries();
    // A middle entry gains a key an older entry holds: the columns stay.
    await update(e2!.id, { b: 5 });
    await appendAndCheck(11);
    // A middle entry that holds the only `d` gains a key no entry holds: not placed from its neighbours (read afresh).
    await update(e3!.id, { e: 1 });
    await appendAndCheck(12);
    // The newest entry gains keys no older entry holds, twice.
    let newest = (await entries()).at(-1)!;
    await update(newest.id, { z: 1, y: 2 });
    await appendAndCheck(13);
    newest = (await entries()).at(-1)!;
    await update(newest.id, { n: 1, m: 2 });
    await appendAndCheck(14);
    // Deleting the newest entry, which holds the highest order and keys no other entry holds.
    newest = (await entries()).at(-1)!;
    await update(newest.id, { only: true });
    await remove(newest.id);
    await appendAndCheck(15);
    // Deleting a middle entry whose keys older entries hold, then the one holding the only `d`/`e`.
    [e1, e2, e3] = await entries();
    await remove(e2!.id);
    await appendAndCheck(16);
    await remove(e3!.id);
    await appendAndCheck(17);
    // The oldest entry's data replaced by a commit (its first column gone: read afresh), then updated and deleted.
    await b.api('POST', `/v1/data-sources/${ds}/commit`, { json: { append: true, returnEntries: false, entries: [{ id: e1!.id, data: { q: 1, c: 1 } }] } });
    await appendAndCheck(18);
    await update(e1!.id, { r: 1 });
    await appendAndCheck(19);
    await remove(e1!.id);
    await appendAndCheck(20);
  });

  it('past the page of older entries it reads, a key is placed from every entry, as before', async () => {
    const rows = Array.from({ length: 130 }, (_, i) => ({ data: i === 120 ? { a: i, late: true } : { a: i } }));
    ds = (await b.api('POST', `/v1/data-sources?appId=${b.server.bootstrap.appId}`, { json: { name: 'SummaryWide' } })).body.dataSource.id;
    expect((await b.api('POST', `/v1/data-sources/${ds}/commit`, { json: { append: true, returnEntries: false, entries: rows } })).status).toBe(200);
    const list = await entries();
    // Entry 125 gains the key only entry 120 holds (older, but past the oldest 100), then loses it again.
    await update(list[125]!.id, { late: false });
    await appendAndCheck(1);
    await update(list[10]!.id, { late: 1 });
    await appendAndCheck(2);
    await remove(list[120]!.id);
    await appendAndCheck(3);
    // The newest entry holds a key that only an entry past the oldest 100 also holds; deleting it keeps the key.
    await update(list[110]!.id, { far: 1 });
    await appendAndCheck(4);
    const newest = (await entries()).at(-1)!;
    await update(newest.id, { far: 2 });
    await remove(newest.id);
    await appendAndCheck(5);
  });
});
