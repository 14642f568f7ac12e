import { deleteDB, openDB, type IDBPDatabase } from 'idb';
import type { Logger } from '../core/logger.js';

/**
 * The device's local stores (design §4 storage/): one IndexedDB database per app, opened through idb,
 * with an in-memory fallback where IndexedDB is missing (Node, happy-dom, some webviews).
 * Values are stored under explicit keys; `getAll` returns them in key order, so time-sortable keys
 * give FIFO queues.
 */
export const STORE_NAMES = ['actions', 'runLogs', 'analyticsQueue', 'runQueue', 'meta'] as const;
export type StoreName = (typeof STORE_NAMES)[number];
export type StoreKey = string | number;

/** Bumped whenever STORE_NAMES or their shape changes; `upgrade` below migrates older versions. */
export const LOCAL_DB_VERSION = 1;

export interface LocalStore {
  /** false for the in-memory fallback. */
  readonly persistent: boolean;
  get<T>(store: StoreName, key: StoreKey): Promise<T | undefined>;
  getAll<T>(store: StoreName): Promise<{ key: StoreKey; value: T }[]>;
  put<T>(store: StoreName, key: StoreKey, value: T): Promise<void>;
  delete(store: StoreName, key: StoreKey): Promise<void>;
  clear(store: StoreName): Promise<void>;
  close(): void;
}

export function createMemoryStore(): LocalStore {
  const stores = new Map<StoreName, Map<StoreKey, unknown>>(STORE_NAMES.map((n) => [n, new Map()]));
  const of = (name: StoreName) => stores.get(name)!;
  const clone = <T>(v: T): T => (v === undefined ? v : structuredClone(v));
  const order = (a: StoreKey, b: StoreKey) =>
    typeof a === typeof b ? (a < b ? -1 : a > b ? 1 : 0) : typeof a === 'number' ? -1 : 1;
  return {
    persistent: false,
    async get<T>(store: StoreName, key: StoreKey) {
      return clone(of(store).get(key) as T | undefined);
    },
    async getAll<T>(store: StoreName) {
      return [...of(store).entries()].sort((a, b) => order(a[0], b[0])).map(([key, value]) => ({ key, value: clone(value as T) }));
    },
    async put(store, key, value) {
      of(store).set(key, clone(value));
    },
    async delete(store, key) {
      of(store).delete(key);
    },
    async clear(store) {
      of(store).clear();
    },
    close() {},
  };
}

function wrap(db: IDBPDatabase): LocalStore {
  return {
    persistent: true,
    get: (store, key) => db.get(store, key),
    async getAll<T>(store: StoreName) {
      const tx = db.transaction(store);
      const [keys, values] = await Promise.all([tx.store.getAllKeys(), tx.store.getAll()]);
      return keys.map((key, i) => ({ key: key as StoreKey, value: values[i] as T }));
    },
    async put(store, key, value) {
      await db.put(store, value, key);
    },
    async delete(store, key) {
      await db.delete(store, key);
    },
    async clear(store) {
      await db.clear(store);
    },
    close: () => db.close(),
  };
}

async function openIdb(name: string): Promise<IDBPDatabase> {
  const db: IDBPDatabase = await openDB(name, LOCAL_DB_VERSION, {
    upgrade(upgrading) {
      // Version 1 creates every store; later versions add their steps here, keyed on oldVersion.
      for (const store of STORE_NAMES) if (!upgrading.objectStoreNames.contains(store)) upgrading.createObjectStore(store);
    },
    // A newer version of the library wants to upgrade in another tab: let it.
    blocking: () => db.close(),
  });
  return db;
}

/**
 * Opens the local store of an app. A database that cannot be opened, is of a newer or foreign layout,
 * or lacks a store is deleted and created anew (local data is a cache and a queue of not-yet-sent work;
 * losing it beats a crash at load), and the reason is logged. No IndexedDB → in-memory store.
 */
export async function openLocalStore(options: { name: string; logger?: Logger }): Promise<LocalStore> {
  if (!(globalThis as { indexedDB?: IDBFactory }).indexedDB) {
    options.logger?.info('IndexedDB is not available here: local stores are kept in memory for this session');
    return createMemoryStore();
  }
  try {
    const db = await openIdb(options.name);
    if (STORE_NAMES.every((s) => db.objectStoreNames.contains(s))) return wrap(db);
    db.close();
    throw new Error('the database lacks some stores (foreign or corrupted layout)');
  } catch (error) {
    options.logger?.warn(`Local database "${options.name}" could not be used (${(error as Error).message}); starting a fresh one`);
    try {
      await deleteDB(options.name);
      return wrap(await openIdb(options.name));
    } catch (second) {
      options.logger?.error(`Local database "${options.name}" could not be recreated (${(second as Error).message}); using memory`);
      return createMemoryStore();
    }
  }
}

/** A key that sorts by time, then by a counter: FIFO order for queues, unique within a page. */
let counter = 0;
export function timeKey(now: number): string {
  counter = (counter + 1) % 1_000_000;
  return `${String(now).padStart(15, '0')}-${String(counter).padStart(6, '0')}-${Math.random().toString(36).slice(2, 8)}`;
}
