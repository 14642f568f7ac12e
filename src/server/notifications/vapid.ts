import { createECDH } from 'node:crypto';
import type { Queryable } from '../db/database.js';
import { getSetting, setSetting } from '../store/identity.js';

export interface VapidKeys {
  publicKey: string;
  privateKey: string;
  subject: string;
}

const SETTING = 'push.vapid';

/** A P-256 key pair as web-push's generateVAPIDKeys makes it (base64url; left-padded to 65 and 32 bytes). */
export function generateVapidKeys(): { publicKey: string; privateKey: string } {
  const curve = createECDH('prime256v1');
  curve.generateKeys();
  const pad = (key: Buffer, length: number) => (key.length < length ? Buffer.concat([Buffer.alloc(length - key.length), key]) : key);
  return { publicKey: pad(curve.getPublicKey(), 65).toString('base64url'), privateKey: pad(curve.getPrivateKey(), 32).toString('base64url') };
}

/** The server's VAPID key pair: generated on first start and kept in the `settings` table. */
export async function ensureVapidKeys(db: Queryable): Promise<VapidKeys> {
  const stored = await getSetting(db, SETTING);
  if (stored) return JSON.parse(stored) as VapidKeys;
  const keys = generateVapidKeys();
  const value: VapidKeys = { ...keys, subject: 'mailto:push@in-app-runtime.invalid' };
  await setSetting(db, SETTING, JSON.stringify(value));
  // Another instance may have written its keys first: the stored pair wins.
  return JSON.parse((await getSetting(db, SETTING))!) as VapidKeys;
}
