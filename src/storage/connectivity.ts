/**
 * Whether the device believes it is online, and a hook for when it comes back. Where `navigator.onLine`
 * is missing (Node) the device is taken to be online; a failed request still says otherwise.
 */
export function isOnline(): boolean {
  const nav = (globalThis as { navigator?: { onLine?: boolean } }).navigator;
  return nav?.onLine !== false;
}

/** Calls `fn` whenever the browser reports the network back. Returns a function that stops it. */
export function onOnline(fn: () => void): () => void {
  const target = globalThis as { addEventListener?: Window['addEventListener']; removeEventListener?: Window['removeEventListener'] };
  if (typeof target.addEventListener !== 'function') return () => {};
  target.addEventListener('online', fn);
  return () => target.removeEventListener?.('online', fn);
}

/** A random id: UUID v4 where crypto.randomUUID exists. */
export function randomId(): string {
  const c = (globalThis as { crypto?: Crypto }).crypto;
  if (c && typeof c.randomUUID === 'function') return c.randomUUID();
  const hex = (n: number) =>
    Math.floor(Math.random() * 16 ** n)
      .toString(16)
      .padStart(n, '0');
  return `${hex(8)}-${hex(4)}-4${hex(3)}-${hex(4)}-${hex(12)}`;
}
