import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTransport } from '../../src/http/transport.js';
import { ApiError, isApiError, isNetworkError, isTimeoutError, NetworkError, TimeoutError } from '../../src/http/errors.js';

/** A tiny real HTTP server whose answers the tests choose by path. */
let server: Server;
let base = '';
const seen: { method: string; url: string; headers: Record<string, unknown>; body: string }[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, headers: req.headers, body });
      const path = req.url!.split('?')[0];
      if (path === '/slow') return void setTimeout(() => res.end('{}'), 800);
      if (path === '/error') {
        res.writeHead(422, { 'Content-Type': 'application/json' });
        return void res.end(JSON.stringify({ error: { code: 'BAD_CRON', message: 'frequency is not a cron', field: 'frequency' } }));
      }
      if (path === '/html-error') {
        res.writeHead(502, { 'Content-Type': 'text/html' });
        return void res.end('<h1>bad gateway</h1>');
      }
      if (path === '/empty') {
        res.writeHead(200);
        return void res.end();
      }
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ ok: true, echo: body ? JSON.parse(body) : null }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

const transport = (token?: string, timeout?: number) => createTransport({ baseUrl: () => base, authToken: () => token, timeout });

describe('transport', () => {
  it('sends Auth-token, JSON bodies and query strings, and parses JSON answers', async () => {
    const result = await transport('secret').request('POST', '/v1/things', {
      json: { a: 1 },
      query: { limit: 5, tags: ['x', 'y'], skip: undefined, none: null },
    });
    expect(result).toEqual({ ok: true, echo: { a: 1 } });
    const last = seen.at(-1)!;
    expect(last.method).toBe('POST');
    expect(last.url).toBe('/v1/things?limit=5&tags=x&tags=y');
    expect(last.headers['auth-token']).toBe('secret');
    expect(last.headers['content-type']).toBe('application/json');
  });

  it('leaves the Auth-token header out when no token is configured', async () => {
    await transport().request('GET', 'v1/x');
    expect(seen.at(-1)!.headers['auth-token']).toBeUndefined();
  });

  it('resolves an empty body as undefined', async () => {
    await expect(transport().request('GET', '/empty')).resolves.toBeUndefined();
  });

  it('maps an error body to ApiError with status, code, message and details', async () => {
    const error = await transport()
      .request('PUT', '/error')
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect(isApiError(error)).toBe(true);
    expect(error).toMatchObject({ status: 422, code: 'BAD_CRON', message: 'frequency is not a cron', details: { field: 'frequency' }, method: 'PUT' });
  });

  it('maps a non-JSON error answer to ApiError with an HTTP_<status> code', async () => {
    const error = await transport()
      .request('GET', '/html-error')
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ status: 502, code: 'HTTP_502' });
    expect((error as ApiError).message).toContain('502');
  });

  it('fails with TimeoutError after the per-request timeout', async () => {
    const error = await transport(undefined, 5_000)
      .request('GET', '/slow', { timeout: 50 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TimeoutError);
    expect(isTimeoutError(error)).toBe(true);
    expect(error).toMatchObject({ code: 'TIMEOUT', timeoutMs: 50 });
  });

  it('rejects with the abort reason when the caller aborts', async () => {
    const controller = new AbortController();
    const pending = transport().request('GET', '/slow', { signal: controller.signal });
    const reason = new Error('user left the page');
    controller.abort(reason);
    await expect(pending).rejects.toBe(reason);
  });

  it('fails with NetworkError when nothing answers', async () => {
    const closed = createTransport({ baseUrl: () => 'http://127.0.0.1:1', authToken: () => undefined });
    const error = await closed.request('GET', '/x').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NetworkError);
    expect(isNetworkError(error)).toBe(true);
    expect(isApiError(error)).toBe(false);
  });

  it('guards recognise errors from another realm by their brand', () => {
    const foreign = Object.assign(Object.create(null), { [Symbol.for('in-app-runtime.error')]: 'ApiError', status: 500 });
    expect(isApiError(foreign)).toBe(true);
    expect(isApiError(new Error('x'))).toBe(false);
    expect(isApiError(null)).toBe(false);
  });

  it('runs beforeRequest and afterResponse hooks', async () => {
    const calls: string[] = [];
    const t = createTransport({
      baseUrl: () => base,
      authToken: () => undefined,
      hooks: {
        beforeRequest: [
          (req) => {
            calls.push('before');
            const h = new Headers(req.headers);
            h.set('X-Trace', '1');
            return new Request(req, { headers: h });
          },
        ],
        afterResponse: [(_req, res) => void calls.push(`after ${res.status}`)],
      },
    });
    await t.request('GET', '/hooks');
    expect(calls).toEqual(['before', 'after 200']);
    expect(seen.at(-1)!.headers['x-trace']).toBe('1');
  });
});
