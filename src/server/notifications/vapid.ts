import webpush from 'web-push';
import type { Queryable } from '../db/database.js';
import { getSetting, setSetting } from '../store/identity.js';

export interface VapidKeys {
  publicKey: string;
  privateKey: string;
  subject: string;
}

const SETTING = 'push.vapid';

/** The server's VAPID key pair: generated on first start and kept in the `settings` table. */
export async function ensureVapidKeys(db: Queryable): Promise<VapidKeys> {
  const stored = await getSetting(db, SETTING);
  if (stored) return JSON.parse(stored) as VapidKeys;
  const keys = webpush.generateVAPIDKeys();
  const value: VapidKeys = { ...keys, subject: 'mailto:push@in-app-runtime.invalid' };
  await setSetting(db, SETTING, JSON.stringify(value));
  // Another instance may have written its keys first: the stored pair wins.
  return JSON.parse((await getSetting(db, SETTING))!) as VapidKeys;
}
