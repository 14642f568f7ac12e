import { describe, expect, it } from 'vitest';
import { createClient, isClientError, isTimeoutError } from '../../src/index.js';

describe('createClient configuration', () => {
  it('defaults to the live environment and the spec limits', () => {
    const client = createClient({ appId: 1, baseUrl: 'https://api.example' });
    expect(client.config.environment).toBe('live');
    expect(client.config.limits).toEqual({
      runTimeoutMs: 120_000,
      payloadChars: 2048,
      resultBytes: 6 * 1024 * 1024,
      runsPerMinute: 60,
      actionsRevalidateMs: 500,
    });
  });

  it('maps regions to the configured base URLs (eu by default), and baseUrl overrides them', () => {
    const regionUrls = { eu: 'https://eu.example', us: 'https://us.example', ca: 'https://ca.example/' };
    expect(createClient({ regionUrls }).baseUrl).toBe('https://eu.example');
    expect(createClient({ region: 'us', regionUrls }).baseUrl).toBe('https://us.example');
    expect(createClient({ region: 'ca', regionUrls }).baseUrl).toBe('https://ca.example');
    expect(createClient({ region: 'us', baseUrl: 'http://localhost:9/', regionUrls }).baseUrl).toBe('http://localhost:9');
  });

  it('without a base URL (or a URL for its region) a call fails with ClientError NOT_CONFIGURED, nothing sent', async () => {
    let fetched = false;
    const fetch = async () => {
      fetched = true;
      return new Response('{}');
    };
    for (const config of [{}, { region: 'us' as const, regionUrls: { eu: 'https://eu.example' } }]) {
      const client = createClient({ appId: 1, ...config, fetch });
      const error = await client.App.info().catch((e: unknown) => e);
      expect(isClientError(error)).toBe(true);
      expect(error).toMatchObject({ code: 'NOT_CONFIGURED', message: expect.stringMatching(/baseUrl/) });
      expect(() => client.baseUrl).toThrow(/No backend URL configured/);
    }
    expect(fetched).toBe(false);
  });

  it('refuses bad configuration with a ClientError INVALID_CONFIG naming the field', () => {
    const refused = (config: Parameters<typeof createClient>[0]) => {
      try {
        createClient(config);
      } catch (error) {
        expect(isClientError(error)).toBe(true);
        expect(error).toMatchObject({ code: 'INVALID_CONFIG' });
        return (error as Error).message;
      }
      return 'accepted';
    };
    expect(refused({ appId: -1 })).toMatch(/config\.appId/);
    expect(refused({ region: 'mars' as 'eu' })).toMatch(/config\.region/);
    expect(refused({ authToken: 5 as unknown as string })).toMatch(/config\.authToken/);
    expect(() => createClient({ appId: -1 })).toThrow(/config\.appId/);
    expect(() => createClient({ region: 'mars' as 'eu' })).toThrow(/config\.region/);
    expect(() => createClient({ environment: 'prod' as 'live' })).toThrow(/config\.environment/);
    expect(() => createClient({ baseUrl: 'not a url' })).toThrow(/config\.baseUrl/);
    expect(() => createClient({ limits: { runTimeoutMs: 0 } })).toThrow(/limits\.runTimeoutMs/);
  });

  it('configure() changes later calls and keeps earlier values', () => {
    const client = createClient({ baseUrl: 'http://a.example', appId: 1, limits: { runTimeoutMs: 5 } });
    client.configure({ baseUrl: 'http://b.example', authToken: 't' });
    expect(client.baseUrl).toBe('http://b.example');
    expect(client.config).toMatchObject({ appId: 1, authToken: 't', limits: { runTimeoutMs: 5, payloadChars: 2048 } });
  });

  it('a call that needs an app id fails with ClientError NOT_CONFIGURED before any request', async () => {
    let fetched = false;
    const client = createClient({ baseUrl: 'http://x.example', fetch: async () => ((fetched = true), new Response('{}')) });
    const error = await client.App.info().catch((e: unknown) => e);
    expect(isClientError(error)).toBe(true);
    expect(error).toMatchObject({ code: 'NOT_CONFIGURED' });
    expect(fetched).toBe(false);
  });

  it('uses the fetch given in the config', async () => {
    const urls: string[] = [];
    const client = createClient({
      baseUrl: 'http://x.example',
      appId: 4,
      authToken: 'tok',
      fetch: async (input) => {
        const request = input as Request;
        urls.push(`${request.url} ${request.headers.get('Auth-token')}`);
        return new Response(JSON.stringify({ app: { id: 4, name: 'A', organizationId: 2 } }), { headers: { 'Content-Type': 'application/json' } });
      },
    });
    await expect(client.App.info()).resolves.toEqual({ id: 4, name: 'A', organizationId: 2 });
    expect(urls).toEqual(['http://x.example/v1/apps/4 tok']);
  });

  it('configure({ fetch, timeout }) applies to later requests', async () => {
    const seen: string[] = [];
    const answer = (name: string, delayMs = 0) =>
      (async (input: RequestInfo | URL, init?: RequestInit) => {
        seen.push(name);
        await new Promise((resolve, reject) => {
          const t = setTimeout(resolve, delayMs);
          (input as Request).signal?.addEventListener('abort', () => (clearTimeout(t), reject(new DOMException('aborted', 'AbortError'))));
        });
        void init;
        return new Response(JSON.stringify({ app: { id: 4, name, organizationId: 2 } }), { headers: { 'Content-Type': 'application/json' } });
      }) as typeof fetch;
    // Created without a fetch: configure() gives one, and it is used.
    const client = createClient({ baseUrl: 'http://x.example', appId: 4 });
    client.configure({ fetch: answer('first') });
    await expect(client.App.info()).resolves.toMatchObject({ name: 'first' });
    client.configure({ fetch: answer('slow', 300), timeout: 50 });
    const error = await client.App.info().catch((e: unknown) => e);
    expect(isTimeoutError(error)).toBe(true);
    client.configure({ timeout: 1000 });
    await expect(client.App.info()).resolves.toMatchObject({ name: 'slow' });
    expect(seen).toEqual(['first', 'slow', 'slow']);
  });
});
