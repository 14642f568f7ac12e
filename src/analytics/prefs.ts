/**
 * Small synchronous per-app state of analytics (session, opt-out) that must survive a page reload and be
 * readable without waiting: localStorage where it works, else memory.
 */
export interface PrefStore {
  get<T>(key: string): T | undefined;
  set(key: string, value: unknown): void;
}

const memory = new Map<string, string>();
/** Keys whose last write localStorage refused (quota, private mode): memory holds their newest value. */
const memoryOnly = new Set<string>();

function storage(): Storage | undefined {
  try {
    const ls = (globalThis as { localStorage?: Storage }).localStorage;
    return ls && typeof ls.getItem === 'function' ? ls : undefined;
  } catch {
    return undefined; // access denied (sandboxed iframe, privacy mode)
  }
}

export function prefStore(prefix: string): PrefStore {
  return {
    get<T>(key: string): T | undefined {
      let raw: string | null | undefined;
      const ls = storage();
      try {
        raw = ls && !memoryOnly.has(prefix + key) ? ls.getItem(prefix + key) : memory.get(prefix + key);
      } catch {
        raw = memory.get(prefix + key);
      }
      if (raw == null) return undefined;
      try {
        return JSON.parse(raw) as T;
      } catch {
        return undefined; // a damaged value is the same as none
      }
    },
    set(key, value) {
      const raw = JSON.stringify(value);
      memory.set(prefix + key, raw);
      try {
        storage()?.setItem(prefix + key, raw);
        memoryOnly.delete(prefix + key);
      } catch {
        memoryOnly.add(prefix + key); // quota or access: memory keeps it for this page, and reads come from there
      }
    },
  };
}
