import 'fake-indexeddb/auto';
import { openDB } from 'idb';
import { describe, expect, it } from 'vitest';
import { createMemoryStore, LOCAL_DB_VERSION, nextTimeKey, openLocalStore, STORE_NAMES, timeKey, type LocalStore } from '../../src/storage/local-store.js';

const logger = () => {
  const lines: string[] = [];
  const log = (level: string) => (m: string) => void lines.push(`${level}: ${m}`);
  return { lines, logger: { debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error') } };
};

async function roundTrip(store: LocalStore) {
  await store.put('runQueue', timeKey(2), { n: 2 });
  await store.put('runQueue', timeKey(1), { n: 1 });
  await store.put('runQueue', timeKey(3), { n: 3 });
  expect((await store.getAll<{ n: number }>('runQueue')).map((e) => e.value.n)).toEqual([1, 2, 3]);
  expect(await store.count('runQueue')).toBe(3);
  const keys = await store.keys('runQueue');
  expect(keys).toHaveLength(3);
  expect(await store.keys('runQueue', 2)).toEqual(keys.slice(0, 2));
  expect(await store.keys('runQueue', 0)).toEqual([]);
  await store.put('actions', 5, { id: 5, name: 'a' });
  expect(await store.get('actions', 5)).toEqual({ id: 5, name: 'a' });
  await store.delete('actions', [5]);
  expect(await store.get('actions', 5)).toBeUndefined();
  await store.clear('runQueue');
  expect(await store.getAll('runQueue')).toEqual([]);
  expect(await store.count('runQueue')).toBe(0);
}

describe('local store', () => {
  it('IndexedDB store keeps values in key order and survives a reopen', async () => {
    const store = await openLocalStore({ name: 'test-a' });
    expect(store.persistent).toBe(true);
    await roundTrip(store);
    await store.put('meta', 'session', { id: 's1' });
    store.close();
    const again = await openLocalStore({ name: 'test-a' });
    expect(await again.get('meta', 'session')).toEqual({ id: 's1' });
    again.close();
  });

  it('memory store behaves the same and copies values', async () => {
    const store = createMemoryStore();
    await roundTrip(store);
    const value = { a: [1] };
    await store.put('meta', 'k', value);
    value.a.push(2);
    expect(await store.get('meta', 'k')).toEqual({ a: [1] });
  });

  it('replaces a foreign database of the same name with a fresh one, saying why', async () => {
    const foreign = await openDB('test-foreign', LOCAL_DB_VERSION, { upgrade: (db) => void db.createObjectStore('somethingElse') });
    await foreign.put('somethingElse', 'x', 'k');
    foreign.close();
    const { lines, logger: log } = logger();
    const store = await openLocalStore({ name: 'test-foreign', logger: log });
    expect(store.persistent).toBe(true);
    expect(lines.join('\n')).toMatch(/could not be used .*lacks some stores.*fresh/);
    await roundTrip(store);
    store.close();
  });

  it('recovers from a database of a newer version', async () => {
    const newer = await openDB('test-newer', LOCAL_DB_VERSION + 5, { upgrade: (db) => void STORE_NAMES.forEach((s) => db.createObjectStore(s)) });
    newer.close();
    const { lines, logger: log } = logger();
    const store = await openLocalStore({ name: 'test-newer', logger: log });
    expect(lines.some((l) => l.startsWith('warn:'))).toBe(true);
    await roundTrip(store);
    store.close();
  });

  it('falls back to memory without IndexedDB and says so', async () => {
    const saved = globalThis.indexedDB;
    // @ts-expect-error simulate an environment without IndexedDB
    delete globalThis.indexedDB;
    try {
      const { lines, logger: log } = logger();
      const store = await openLocalStore({ name: 'x', logger: log });
      expect(store.persistent).toBe(false);
      expect(lines).toEqual(['info: IndexedDB is not available here: local stores are kept in memory for this session']);
    } finally {
      globalThis.indexedDB = saved;
    }
  });

  async function appendsInOrder(store: LocalStore) {
    // A queue written by an earlier version (keys from the clock alone), then a clock set back by an hour.
    const t = Date.parse('2031-06-01T12:00:00Z');
    await store.put('runQueue', timeKey(t), { n: 1 });
    await store.put('runQueue', timeKey(t + 5), { n: 2 });
    const {
      keys: [k3, k4],
    } = await store.append('runQueue', [{ n: 3 }, { n: 4 }], t - 3_600_000);
    const {
      keys: [k5],
    } = await store.append('runQueue', [{ n: 5 }], t + 60_000); // the clock is ahead again: its time is used
    // With the count of values after the write.
    const {
      keys: [k6],
      count,
    } = await store.append('runQueue', [{ n: 6 }], t - 3_600_000);
    expect(count).toBe(6);
    expect((await store.getAll<{ n: number }>('runQueue')).map((e) => e.value.n)).toEqual([1, 2, 3, 4, 5, 6]);
    expect([k3, k4, k5, k6].map((k) => Number(k!.slice(0, 15)))).toEqual([t + 6, t + 7, t + 60_000, t + 60_001]);
    expect(await store.keys('runQueue')).toHaveLength(6);
    // The first values only, and several keys deleted at once.
    expect((await store.getAll<{ n: number }>('runQueue', 2)).map((e) => e.value.n)).toEqual([1, 2]);
    await store.delete('runQueue', [k3!, k5!, 'not-there']);
    expect((await store.getAll<{ n: number }>('runQueue')).map((e) => e.value.n)).toEqual([1, 2, 4, 6]);
    await store.clear('runQueue');
  }

  it('append stores all of its values or none: one that cannot be copied stores nothing (IndexedDB and memory)', async () => {
    for (const store of [await openLocalStore({ name: 'test-append-all' }), createMemoryStore()]) {
      await store.append('runLogs', [{ n: 0 }], Date.now());
      const refused = await store.append('runLogs', [{ n: 1 }, { n: 2, fn: () => 1 }, { n: 3 }], Date.now()).catch((error: unknown) => error);
      expect((refused as Error).name).toBe('DataCloneError');
      expect((await store.getAll<{ n: number }>('runLogs')).map((e) => e.value.n)).toEqual([0]);
      await store.append('runLogs', [{ n: 4 }], Date.now());
      expect((await store.getAll<{ n: number }>('runLogs')).map((e) => e.value.n)).toEqual([0, 4]);
      await store.clear('runLogs');
      store.close();
    }
  });

  it('append gives increasing keys whatever the clock does, after keys of the old layout (IndexedDB and memory)', async () => {
    const store = await openLocalStore({ name: 'test-append' });
    await appendsInOrder(store);
    store.close();
    await appendsInOrder(createMemoryStore());
    expect(nextTimeKey(1000, undefined).slice(0, 15)).toBe('000000000001000');
    expect(nextTimeKey(1000, 'not-a-time-key').slice(0, 15)).toBe('000000000001000');
  });

  it('tells the owner when another tab deletes or upgrades the database', async () => {
    const reasons: string[] = [];
    const store = await openLocalStore({ name: 'test-close', onClose: (r) => void reasons.push(r) });
    await store.put('meta', 'k', 1);
    const { deleteDB } = await import('idb');
    await deleteDB('test-close');
    expect(reasons).toEqual(['deleted']);
    await openLocalStore({ name: 'test-close', onClose: (r) => void reasons.push(r) });
    const newer = await openDB('test-close', LOCAL_DB_VERSION + 1);
    expect(reasons).toEqual(['deleted', 'upgraded']);
    newer.close();
  });
});
