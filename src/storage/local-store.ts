import { deleteDB, openDB, type IDBPDatabase } from 'idb';
import type { Logger } from '../core/logger.js';

/**
 * The device's local stores (design §4 storage/): one IndexedDB database per app, opened through idb,
 * with an in-memory fallback where IndexedDB is missing (Node, happy-dom, some webviews).
 * Values are stored under explicit keys; `getAll` returns them in key order, so the increasing keys of
 * `append` (see `nextTimeKey`) give FIFO queues.
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
  /** The values of a store in key order, with their keys; the first `limit` (≥ 1) only when given. */
  getAll<T>(store: StoreName, limit?: number): Promise<{ key: StoreKey; value: T }[]>;
  /** The keys of a store, in key order (values are not read); the first `limit` only when given. */
  keys(store: StoreName, limit?: number): Promise<StoreKey[]>;
  /** How many values a store holds (nothing is read). */
  count(store: StoreName): Promise<number>;
  put<T>(store: StoreName, key: StoreKey, value: T): Promise<void>;
  /**
   * Stores `values` at the end of a queue store, in order, under new keys (see `nextTimeKey`: after every key
   * already there, whatever the clock says) and resolves with those keys. The last key is read in the same
   * transaction as the writes, so two tabs appending at once still get increasing keys; so is the count of values
   * the store holds after them, which the promise resolves with beside the keys. One transaction: all or none.
   */
  append<T>(store: StoreName, values: readonly T[], now: number): Promise<{ keys: string[]; count: number }>;
  /** Deletes these keys, in one transaction (all or none). */
  delete(store: StoreName, keys: readonly StoreKey[]): Promise<void>;
  clear(store: StoreName): Promise<void>;
  close(): void;
}

export function createMemoryStore(): LocalStore {
  const stores = new Map<StoreName, Map<StoreKey, unknown>>(STORE_NAMES.map((n) => [n, new Map()]));
  const of = (name: StoreName) => stores.get(name)!;
  const clone = <T>(v: T): T => (v === undefined ? v : structuredClone(v));
  const order = (a: StoreKey, b: StoreKey) => (typeof a === typeof b ? (a < b ? -1 : a > b ? 1 : 0) : typeof a === 'number' ? -1 : 1);
  return {
    persistent: false,
    async get<T>(store: StoreName, key: StoreKey) {
      return clone(of(store).get(key) as T | undefined);
    },
    async getAll<T>(store: StoreName, limit?: number) {
      return [...of(store).entries()]
        .sort((a, b) => order(a[0], b[0]))
        .slice(0, limit)
        .map(([key, value]) => ({ key, value: clone(value as T) }));
    },
    async keys(store, limit) {
      return [...of(store).keys()].sort(order).slice(0, limit === undefined ? undefined : Math.max(0, limit));
    },
    async count(store) {
      return of(store).size;
    },
    async put(store, key, value) {
      of(store).set(key, clone(value));
    },
    async append(store, values, now) {
      let last = [...of(store).keys()].sort(order).at(-1);
      // Every value copied before any is stored: all or none.
      const copies = values.map(clone);
      const keys = copies.map((copy) => {
        const key = nextTimeKey(now, last);
        of(store).set((last = key), copy);
        return key;
      });
      return { keys, count: of(store).size };
    },
    async delete(store, keys) {
      for (const key of keys) of(store).delete(key);
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
    async getAll<T>(store: StoreName, limit?: number) {
      const tx = db.transaction(store);
      const [keys, values] = await Promise.all([tx.store.getAllKeys(null, limit), tx.store.getAll(null, limit)]);
      return keys.map((key, i) => ({ key: key as StoreKey, value: values[i] as T }));
    },
    // getAllKeys reads a count of 0 as "no limit".
    keys: async (store, limit) => (limit !== undefined && limit <= 0 ? [] : (db.getAllKeys(store, null, limit) as Promise<StoreKey[]>)),
    count: (store) => db.count(store),
    async put(store, key, value) {
      await db.put(store, value, key);
    },
    async append(store, values, now) {
      const tx = db.transaction(store, 'readwrite');
      let last = (await tx.store.openKeyCursor(null, 'prev'))?.key as StoreKey | undefined;
      const keys = values.map(() => (last = nextTimeKey(now, last)));
      const writes: Promise<unknown>[] = [tx.done];
      try {
        for (const [i, value] of values.entries()) writes.push(tx.store.put(value, keys[i]));
      } catch (error) {
        // A value that cannot be stored (not cloneable) throws at its put: the ones before it go too (all or none),
        // and their requests' AbortErrors are this throw.
        for (const w of writes) w.catch(() => undefined);
        tx.abort();
        throw error;
      }
      // Requests run in the order they are made: the count comes after the writes.
      const [count] = await Promise.all([tx.store.count(), ...writes]);
      return { keys, count };
    },
    async delete(store, keys) {
      const tx = db.transaction(store, 'readwrite');
      await Promise.all([...keys.map((key) => tx.store.delete(key)), tx.done]);
    },
    async clear(store) {
      await db.clear(store);
    },
    close: () => db.close(),
  };
}

/**
 * Why a connection was closed from outside: another tab deletes the database (`deleted`), opens it with a newer
 * layout version (`upgraded`: a newer library), or the browser closed it (`closed`: storage cleared, crash).
 */
export type CloseReason = 'deleted' | 'upgraded' | 'closed';

async function openIdb(name: string, onClose?: (reason: CloseReason) => void): Promise<IDBPDatabase> {
  const db: IDBPDatabase = await openDB(name, LOCAL_DB_VERSION, {
    upgrade(upgrading) {
      // Version 1 creates every store; later versions add their steps here, keyed on oldVersion.
      for (const store of STORE_NAMES) if (!upgrading.objectStoreNames.contains(store)) upgrading.createObjectStore(store);
    },
    // Another tab deletes the database or a newer version of the library upgrades it: let it, and say so,
    // so that the owner of this connection stops using it (client-store.ts opens a new one).
    blocking(_current, next) {
      db.close();
      onClose?.(next === null ? 'deleted' : 'upgraded');
    },
    terminated: () => onClose?.('closed'),
  });
  return db;
}

/**
 * Opens the local store of an app. A database that cannot be opened, is of a newer or foreign layout,
 * or lacks a store is deleted and created anew (local data is a cache and a queue of not-yet-sent work;
 * losing it beats a crash at load), and the reason is logged. No IndexedDB → in-memory store.
 * `onClose` is called when the connection is later closed from outside (see CloseReason); the store is
 * unusable from then on.
 */
export async function openLocalStore(options: { name: string; logger?: Logger; onClose?: (reason: CloseReason) => void }): Promise<LocalStore> {
  if (!(globalThis as { indexedDB?: IDBFactory }).indexedDB) {
    options.logger?.info('IndexedDB is not available here: local stores are kept in memory for this session');
    return createMemoryStore();
  }
  try {
    const db = await openIdb(options.name, options.onClose);
    if (STORE_NAMES.every((s) => db.objectStoreNames.contains(s))) return wrap(db);
    db.close();
    throw new Error('the database lacks some stores (foreign or corrupted layout)');
  } catch (error) {
    options.logger?.warn(`Local database "${options.name}" could not be used (${(error as Error).message}); starting a fresh one`);
    try {
      await deleteDB(options.name);
      return wrap(await openIdb(options.name, options.onClose));
    } catch (second) {
      options.logger?.error(`Local database "${options.name}" could not be recreated (${(second as Error).message}); using memory`);
      return createMemoryStore();
    }
  }
}

/**
 * A key that sorts by time, then by a counter: `<ms, 15 digits>-<counter, 6 digits>-<random, 6>`. This is the
 * layout of every key the queue stores (`analyticsQueue`, `runQueue`, `runLogs`) have held since version 1.
 */
let counter = 0;
export function timeKey(now: number): string {
  counter = (counter + 1) % 1_000_000;
  return `${String(now).padStart(15, '0')}-${String(counter).padStart(6, '0')}-${Math.random().toString(36).slice(2, 8)}`;
}

/**
 * The key of an item appended to a queue store whose greatest key is `lastKey`: a `timeKey` whose time is
 * max(now, time of `lastKey` + 1 ms). Queues are sent in key order, and the device clock is not monotonic
 * (NTP corrections, the user setting it, time zones done wrong): keyed on the clock alone, an item made after
 * the clock went back would be sent before older ones. Taking the last key into account keeps the keys strictly
 * increasing in the order the items were made; while the clock is behind, keys step 1 ms per item and meet the
 * clock again once it passes them. The layout is unchanged, so keys written by earlier versions (same layout,
 * time from the clock) are read and ordered as they are and seed the next key; no schema change, no migration.
 * A last key of another shape (none is written by this library) is ignored.
 */
export function nextTimeKey(now: number, lastKey: StoreKey | undefined): string {
  const last = typeof lastKey === 'string' && /^\d{15}-/.test(lastKey) ? Number(lastKey.slice(0, 15)) : -1;
  const time = Number.isFinite(now) ? Math.max(0, Math.floor(now)) : 0;
  return timeKey(Math.max(time, last + 1));
}
