import type { Database, Queryable } from './db/database.js';
import { createApp, createOrganization, createToken, getSetting, setSetting } from './store/identity.js';

/** The identity created on first start and kept in the database (and `bootstrap.json` in the data folder). */
export interface Bootstrap {
  organizationId: number;
  appId: number;
  /** A client token of the app: the one an app screen carries in its HTML (docs/security.md, "Token kinds"). */
  clientToken: string;
  /** An API token of the app (integrations and servers; never put it in a page). */
  apiToken: string;
  /** A studio token of the organization (may manage everything, e.g. list push subscriptions). */
  studioToken: string;
}

async function createTokens(tx: Queryable, organizationId: number, appId: number, now: string) {
  const api = await createToken(tx, { kind: 'api', name: 'Default API token', organizationId, appId, now });
  const studio = await createToken(tx, { kind: 'studio', name: 'Studio', organizationId, appId: null, now });
  const client = await createToken(tx, { kind: 'client', name: 'Default client token', organizationId, appId, now });
  return { clientToken: client.token, apiToken: api.token, studioToken: studio.token };
}

/**
 * A new organization with one app, a client and an API token of the app and a studio token of the organization
 * (operators and tests: `RunningServer.createOrganization`). No HTTP route creates organizations.
 */
export async function createTenant(db: Database, name: string, now: string): Promise<Bootstrap> {
  return db.transaction(async (tx) => {
    const organizationId = await createOrganization(tx, name, now);
    const appId = await createApp(tx, organizationId, `${name} app`, now);
    return { organizationId, appId, ...(await createTokens(tx, organizationId, appId, now)) };
  });
}

/**
 * Creates the organization, app and tokens once; later starts read them back. A bootstrap saved before client
 * tokens existed gets one now (saved with it), so an old data folder keeps working.
 */
export async function ensureBootstrap(db: Database, now: string): Promise<{ bootstrap: Bootstrap; created: boolean }> {
  const existing = await getSetting(db, 'bootstrap');
  if (existing) {
    const saved = JSON.parse(existing) as Bootstrap;
    if (typeof saved.clientToken === 'string' && saved.clientToken !== '') return { bootstrap: saved, created: false };
    const bootstrap = await db.transaction(async (tx) => {
      // Re-read inside the transaction: instances sharing a database start one at a time, but stay safe.
      const current = JSON.parse((await getSetting(tx, 'bootstrap'))!) as Bootstrap;
      if (current.clientToken) return current;
      const { organizationId, appId } = current;
      const client = await createToken(tx, { kind: 'client', name: 'Default client token', organizationId, appId, now });
      const value: Bootstrap = { organizationId, appId, clientToken: client.token, apiToken: current.apiToken, studioToken: current.studioToken };
      await setSetting(tx, 'bootstrap', JSON.stringify(value));
      return value;
    });
    return { bootstrap, created: false };
  }
  const bootstrap = await db.transaction(async (tx) => {
    const organizationId = await createOrganization(tx, 'Demo organization', now);
    const appId = await createApp(tx, organizationId, 'Demo app', now);
    const value: Bootstrap = { organizationId, appId, ...(await createTokens(tx, organizationId, appId, now)) };
    await setSetting(tx, 'bootstrap', JSON.stringify(value));
    return value;
  });
  return { bootstrap, created: true };
}
