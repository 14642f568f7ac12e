import type { Database } from './db/database.js';
import { createApp, createOrganization, createToken, getSetting, setSetting } from './store/identity.js';

/** The identity created on first start and kept in the database (and `bootstrap.json` in the data folder). */
export interface Bootstrap {
  organizationId: number;
  appId: number;
  /** An API token of the app (what integrations and app screens use). */
  apiToken: string;
  /** A studio token of the organization (may manage everything, e.g. list push subscriptions). */
  studioToken: string;
}

/**
 * A new organization with one app, an API token of the app and a studio token of the organization
 * (operators and tests: `RunningServer.createOrganization`). No HTTP route creates organizations.
 */
export async function createTenant(db: Database, name: string, now: string): Promise<Bootstrap> {
  return db.transaction(async (tx) => {
    const organizationId = await createOrganization(tx, name, now);
    const appId = await createApp(tx, organizationId, `${name} app`, now);
    const api = await createToken(tx, { kind: 'api', name: 'Default API token', organizationId, appId, now });
    const studio = await createToken(tx, { kind: 'studio', name: 'Studio', organizationId, appId: null, now });
    return { organizationId, appId, apiToken: api.token, studioToken: studio.token };
  });
}

/** Creates the organization, app and tokens once; later starts read them back. */
export async function ensureBootstrap(db: Database, now: string): Promise<{ bootstrap: Bootstrap; created: boolean }> {
  const existing = await getSetting(db, 'bootstrap');
  if (existing) return { bootstrap: JSON.parse(existing) as Bootstrap, created: false };
  const bootstrap = await db.transaction(async (tx) => {
    const organizationId = await createOrganization(tx, 'Demo organization', now);
    const appId = await createApp(tx, organizationId, 'Demo app', now);
    const api = await createToken(tx, { kind: 'api', name: 'Default API token', organizationId, appId, now });
    const studio = await createToken(tx, { kind: 'studio', name: 'Studio', organizationId, appId: null, now });
    const value: Bootstrap = { organizationId, appId, apiToken: api.token, studioToken: studio.token };
    await setSetting(tx, 'bootstrap', JSON.stringify(value));
    return value;
  });
  return { bootstrap, created: true };
}
