import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer } from '../../src/server/index.js';
import { createClient, isApiError } from '../../src/index.js';
import { startTestBackend, type TestBackend } from '../helpers/server.js';

describe('reference backend foundation', () => {
  let backend: TestBackend;
  beforeAll(async () => {
    backend = await startTestBackend();
  });
  afterAll(() => backend.close());

  it('answers an unknown route with a 404 JSON error', async () => {
    const res = await backend.api('GET', '/v1/does-not-exist');
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toContain('application/json');
    expect(res.body).toEqual({ error: { code: 'NOT_FOUND', message: 'No route for GET /v1/does-not-exist' }, message: 'No route for GET /v1/does-not-exist' });
  });

  it('refuses a request without a token with 401', async () => {
    const res = await backend.api('GET', `/v1/apps/${backend.server.bootstrap.appId}`, { token: null });
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('MISSING_TOKEN');
  });

  it('refuses an unknown token with 401', async () => {
    const res = await backend.api('GET', `/v1/apps/${backend.server.bootstrap.appId}`, { token: 'nope' });
    expect(res.status).toBe(401);
    expect(res.body.error).toEqual({ code: 'INVALID_TOKEN', message: 'The Auth-token header holds an unknown token' });
  });

  it('answers an authenticated call', async () => {
    const res = await backend.api('GET', `/v1/apps/${backend.server.bootstrap.appId}`);
    expect(res.status).toBe(200);
    expect(res.body.app).toEqual({ id: backend.server.bootstrap.appId, name: 'Demo app', organizationId: backend.server.bootstrap.organizationId });
  });

  it('refuses a token of another app with 403 and an unknown app with 404', async () => {
    const other = await backend.api('GET', '/v1/apps/999');
    expect(other.status).toBe(404);
    expect(other.body.error.code).toBe('APP_NOT_FOUND');
    const bad = await backend.api('GET', '/v1/apps/abc');
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toContain('appId');
  });

  it('answers malformed JSON with a 400 naming the problem, and changes nothing', async () => {
    const { appId, studioToken } = backend.server.bootstrap;
    const res = await backend.api('PUT', `/v1/apps/${appId}`, {
      token: studioToken,
      body: '{"name": "x",',
      headers: { 'Content-Type': 'application/json' },
    });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('INVALID_JSON');
    expect(res.body.error.message).toMatch(/^The request body is not valid JSON: .+/);
    const wrongType = await backend.api('PUT', `/v1/apps/${appId}`, { token: studioToken, json: { name: 42 } });
    expect(wrongType.status).toBe(400);
    expect(wrongType.body.error.message).toContain('"name"');
    const notObject = await backend.api('PUT', `/v1/apps/${appId}`, { token: studioToken, json: [1] });
    expect(notObject.status).toBe(400);
    expect((await backend.api('GET', `/v1/apps/${appId}`)).body.app.name).toBe('Demo app');
  });

  it('refuses studio routes to API tokens with 403', async () => {
    const res = await backend.api('PUT', `/v1/apps/${backend.server.bootstrap.appId}`, { json: { name: 'x' } });
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('STUDIO_ONLY');
  });

  it('refuses a body over the size limit with 413', async () => {
    const small = await startTestBackend({ limits: { bodyBytes: 100 } });
    try {
      const { appId, studioToken } = small.server.bootstrap;
      const res = await small.api('PUT', `/v1/apps/${appId}`, { token: studioToken, json: { name: 'x'.repeat(200) } });
      expect(res.status).toBe(413);
      expect(res.body.error.code).toBe('PAYLOAD_TOO_LARGE');
    } finally {
      await small.close();
    }
  });

  it('answers CORS preflight requests', async () => {
    const res = await backend.api('OPTIONS', '/v1/apps/1', { token: null });
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-headers')).toContain('Auth-token');
    // Cached by the browser, so a screen's calls are not each preceded by a preflight round trip.
    expect(res.headers.get('access-control-max-age')).toBe('86400');
  });

  it('the typed client maps backend errors to ApiError', async () => {
    const anonymous = createClient({ baseUrl: backend.url, appId: backend.server.bootstrap.appId });
    const error = await anonymous.App.info().catch((e: unknown) => e);
    expect(isApiError(error)).toBe(true);
    expect(error).toMatchObject({ status: 401, code: 'MISSING_TOKEN', name: 'ApiError' });
    await expect(backend.client.App.info()).resolves.toMatchObject({ id: backend.server.bootstrap.appId });
  });
});

describe('startServer', () => {
  it('keeps the bootstrap identity across a restart on the same data folder', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'iar-'));
    try {
      const first = await startServer({ dataDir, log: false });
      const identity = first.bootstrap;
      await first.close();
      const second = await startServer({ dataDir, log: false });
      expect(second.bootstrap).toEqual(identity);
      const res = await fetch(`${second.url}/v1/apps/${identity.appId}`, { headers: { 'Auth-token': identity.apiToken } });
      expect(res.status).toBe(200);
      await second.close();
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('fails with EADDRINUSE when the port is taken', async () => {
    const first = await startServer({ memory: true, log: false });
    try {
      await expect(startServer({ memory: true, port: first.port, log: false })).rejects.toMatchObject({ code: 'EADDRINUSE' });
    } finally {
      await first.close();
    }
  });
});
