import { expect } from 'vitest';
import type { Bootstrap } from '../../src/server/index.js';

/**
 * Requests of one tenant (its token) to a backend at `url()`, for tests where several organizations share it:
 * `request` answers the status and the parsed body; `createWithEntries` makes a data source in the tenant's app
 * holding `entries` and answers its id.
 */
export function tenantRequests(url: () => string) {
  const request = async (token: string, method: string, path: string, json?: unknown) => {
    const res = await fetch(url() + path, {
      method,
      headers: { 'Auth-token': token, 'Content-Type': 'application/json' },
      body: json === undefined ? undefined : JSON.stringify(json),
    });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : undefined) as any };
  };
  const createWithEntries = async (boot: Bootstrap, name: string, entries: unknown[]) => {
    const made = await request(boot.apiToken, 'POST', `/v1/data-sources?appId=${boot.appId}`, { name });
    expect(made.status).toBe(201);
    const ds = made.body.dataSource.id as number;
    expect((await request(boot.apiToken, 'POST', `/v1/data-sources/${ds}/data`, { entries })).status).toBe(200);
    return ds;
  };
  return { request, createWithEntries };
}
