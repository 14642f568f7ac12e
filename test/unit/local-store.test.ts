import 'fake-indexeddb/auto';
import { openDB } from 'idb';
import { describe, expect, it } from 'vitest';
import { createMemoryStore, LOCAL_DB_VERSION, openLocalStore, STORE_NAMES, timeKey, type LocalStore } from '../../src/storage/local-store.js';

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
  await store.put('actions', 5, { id: 5, name: 'a' });
  expect(await store.get('actions', 5)).toEqual({ id: 5, name: 'a' });
  await store.delete('actions', 5);
  expect(await store.get('actions', 5)).toBeUndefined();
  await store.clear('runQueue');
  expect(await store.getAll('runQueue')).toEqual([]);
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
});
