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
  if (typeof c?.randomUUID === 'function') return c.randomUUID();
  // Pages on plain http (a webview, an intranet) have no randomUUID but do have getRandomValues: these ids are
  // capabilities (a client token reads a run with its key). Math.random only where there is no crypto at all.
  const b = new Uint8Array(16);
  if (typeof c?.getRandomValues === 'function') c.getRandomValues(b);
  else for (let i = 0; i < 16; i++) b[i] = Math.random() * 256;
  b[6] = (b[6]! & 15) | 64;
  b[8] = (b[8]! & 63) | 128;
  const h = Array.from(b, (x) => (x + 256).toString(16).slice(1)).join('');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
