// @vitest-environment node
import { afterEach, describe, expect, it } from 'vitest';
import { randomId } from '../../src/storage/connectivity.js';

/**
 * Idempotency keys and device run ids are capabilities (a client token reads a server run only with its key):
 * pages without crypto.randomUUID (plain http, an old webview) still get them from crypto.getRandomValues.
 */
const real = Object.getOwnPropertyDescriptor(globalThis, 'crypto')!;
const webcrypto = globalThis.crypto;
afterEach(() => Object.defineProperty(globalThis, 'crypto', real));
const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('randomId', () => {
  it('is crypto.randomUUID where it exists', () => {
    expect(randomId()).toMatch(UUID_V4);
  });

  it('without randomUUID, a v4 UUID from crypto.getRandomValues (never Math.random)', () => {
    let calls = 0;
    const getRandomValues = (array: Uint8Array): Uint8Array => {
      calls++;
      return webcrypto.getRandomValues(array);
    };
    Object.defineProperty(globalThis, 'crypto', { configurable: true, value: { getRandomValues } });
    const random = Math.random;
    Math.random = () => {
      throw new Error('Math.random used');
    };
    try {
      const ids = Array.from({ length: 200 }, () => randomId());
      for (const id of ids) expect(id).toMatch(UUID_V4);
      expect(new Set(ids).size).toBe(200);
      expect(calls).toBe(200);
    } finally {
      Math.random = random;
    }
  });
});
