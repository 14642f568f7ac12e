import { startServer, type RunningServer, type ServerOptions } from '../../src/server/index.js';
import { createClient, type Client } from '../../src/index.js';
import type { ClientConfig } from '../../src/core/config.js';
import { createTestDatabase } from './postgres.js';

/** `IAR_TEST_DB=postgres`: test backends run on a fresh PostgreSQL database each (see test/helpers/postgres.ts). */
export const testEngine: 'sqlite' | 'postgres' = process.env.IAR_TEST_DB === 'postgres' ? 'postgres' : 'sqlite';

export interface TestBackend {
  server: RunningServer;
  url: string;
  /** A client of the bootstrap app with its API token. */
  client: Client;
  /** A client with the studio token. */
  studio: Client;
  /** The app's client token (`iar_client_…`, what a page carries). */
  clientToken: string;
  /** Raw HTTP: `api('GET', '/v1/…', { token, json, headers })` returning status and parsed body. */
  api: (
    method: string,
    path: string,
    init?: { token?: string | null; json?: unknown; body?: string; headers?: Record<string, string> },
  ) => Promise<{ status: number; body: any; headers: Headers }>;
  close(): Promise<void>;
}

/**
 * Starts the real backend in-process on a random port (in-memory database unless dataDir is given;
 * with `IAR_TEST_DB=postgres`, a fresh PostgreSQL database dropped on close).
 */
/**
 * The entry cache on (the default budget) and off (`limits.entryCacheEntries: 0`, as for a data source larger than
 * the budget): data source suites run under both, so an answer never depends on what the cache holds.
 */
export const ENTRY_CACHE_CASES = [
  { cache: 'on', entryCacheEntries: 100_000 },
  { cache: 'off', entryCacheEntries: 0 },
] as const;

export async function startTestBackend(options: ServerOptions = {}, clientConfig: ClientConfig = {}): Promise<TestBackend> {
  const database = testEngine === 'postgres' && options.dataDir === undefined && options.databaseUrl === undefined ? await createTestDatabase() : undefined;
  let server: RunningServer;
  try {
    server = await startServer({ port: 0, memory: options.dataDir === undefined, log: false, ...options, databaseUrl: options.databaseUrl ?? database?.url });
  } catch (error) {
    await database?.drop();
    throw error;
  }
  const { appId, organizationId, apiToken, studioToken } = server.bootstrap;
  const base = { baseUrl: server.url, appId, organizationId, clock: options.clock, ...clientConfig };
  const client = createClient({ ...base, authToken: apiToken });
  const studio = createClient({ ...base, authToken: studioToken });
  const api: TestBackend['api'] = async (method, path, init = {}) => {
    const headers: Record<string, string> = { ...(init.headers ?? {}) };
    const token = init.token === undefined ? apiToken : init.token;
    if (token) headers['Auth-token'] = token;
    let body = init.body;
    if (init.json !== undefined) {
      body = JSON.stringify(init.json);
      headers['Content-Type'] = 'application/json';
    }
    const response = await fetch(server.url + path, { method, headers, body });
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      /* not JSON */
    }
    return { status: response.status, body: parsed, headers: response.headers };
  };
  const close = async () => {
    try {
      await server.close();
    } finally {
      await database?.drop();
    }
  };
  return { server, url: server.url, client, studio, clientToken: server.bootstrap.clientToken, api, close };
}
