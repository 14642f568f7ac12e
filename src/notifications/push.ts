const STORAGE_KEY = 'in-app-runtime.recipientId';
let memoryRecipientId: string | undefined;

function randomGuid(): string {
  const c = globalThis.crypto;
  if (c?.randomUUID) return c.randomUUID();
  const bytes = new Uint8Array(16);
  if (c?.getRandomValues) c.getRandomValues(bytes);
  else for (let i = 0; i < 16; i++) bytes[i] = Math.floor(Math.random() * 256);
  bytes[6] = (bytes[6]! & 0x0f) | 0x40;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = [...bytes].map((b) => b.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** This device's recipient id: a GUID kept in localStorage (in memory where there is none). */
export function deviceRecipientId(): string {
  try {
    const storage = globalThis.localStorage;
    if (storage) {
      let id = storage.getItem(STORAGE_KEY);
      if (!id) {
        id = randomGuid();
        storage.setItem(STORAGE_KEY, id);
      }
      return id;
    }
  } catch {
    /* storage blocked (privacy mode): fall through */
  }
  return (memoryRecipientId ??= randomGuid());
}
