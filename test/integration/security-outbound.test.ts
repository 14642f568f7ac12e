import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { outboundRequest, DEFAULT_OUTBOUND } from '../../src/server/actions/outbound-http.js';
import { checkOutboundUrl, isPrivateAddress } from '../../src/server/http/outbound-guard.js';
import { startTestBackend } from '../helpers/server.js';
import { eventually } from '../helpers/wait.js';

/** Outbound calls and private networks: `limits.outboundPrivateNetworks` ('allow' by default, or 'deny'). */

let target: Server;
let targetUrl: string;
const received: string[] = [];
beforeAll(async () => {
  target = createServer((req, res) => {
    received.push(`${req.method} ${req.url}`);
    if (req.url === '/redirect') {
      res.writeHead(302, { Location: '/landed' });
      res.end();
      return;
    }
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end('{"internal":"secret"}');
  });
  await new Promise<void>((done) => target.listen(0, '127.0.0.1', done));
  targetUrl = `http://127.0.0.1:${(target.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((done) => target.close(() => done())));

describe('private address ranges', () => {
  it('recognises loopback, private, link-local, CGNAT, unspecified, mapped and IPv6 local addresses', () => {
    for (const ip of [
      '127.0.0.1',
      '127.8.9.1',
      '10.1.2.3',
      '172.16.0.1',
      '172.31.255.255',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '224.0.0.1',
      '::1',
      '::',
      'fc00::1',
      'fd12::1',
      'fe80::1',
      '::ffff:127.0.0.1',
      '::ffff:7f00:1',
      '::ffff:a9fe:a9fe',
      '[::1]',
    ])
      expect(isPrivateAddress(ip), ip).toBe(true);
    for (const ip of ['8.8.8.8', '1.1.1.1', '172.32.0.1', '192.169.0.1', '2606:4700:4700::1111', '::ffff:8.8.8.8'])
      expect(isPrivateAddress(ip), ip).toBe(false);
  });

  it('checks the URL host in every spelling the URL parser accepts, and names that resolve locally', async () => {
    for (const url of [
      'http://127.0.0.1/',
      'http://2130706433/',
      'http://0x7f.1/',
      'http://127.1/',
      'http://[::1]/',
      'http://[::ffff:127.0.0.1]/',
      'http://localhost/',
      'http://169.254.169.254/latest/meta-data',
    ])
      await expect(checkOutboundUrl(new URL(url), 'deny'), url).rejects.toThrow(/private network/);
    await expect(checkOutboundUrl(new URL('http://127.0.0.1/'), 'allow')).resolves.toBeUndefined();
    await expect(checkOutboundUrl(new URL('http://127.0.0.1/'), undefined)).resolves.toBeUndefined();
  });
});

describe('http-request (outboundRequest)', () => {
  it('allow (default): local services are reachable and redirects followed', async () => {
    const res = await outboundRequest({ url: `${targetUrl}/redirect` });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ internal: 'secret' });
  });

  it('deny: a private address is refused before any request is sent', async () => {
    received.length = 0;
    await expect(outboundRequest({ url: `${targetUrl}/x` }, { ...DEFAULT_OUTBOUND, privateNetworks: 'deny' })).rejects.toThrow(/private network/);
    await expect(outboundRequest({ url: `http://localhost:${new URL(targetUrl).port}/x` }, { ...DEFAULT_OUTBOUND, privateNetworks: 'deny' })).rejects.toThrow(
      /private network/,
    );
    expect(received).toEqual([]);
  });
});

describe('http-request in a server run', () => {
  it('deny: a run calling a local address fails and sends nothing', async () => {
    const b = await startTestBackend({ limits: { outboundPrivateNetworks: 'deny', runTimeoutMs: 5000 } });
    try {
      received.length = 0;
      const a = `/v1/apps/${b.server.bootstrap.appId}/tasks`;
      const created = await b.api('POST', a, {
        json: {
          name: 'ssrf',
          environment: 'server',
          functions: [{ functionPackage: 'com.client.function.http-request', settings: { url: `${targetUrl}/run` } }],
        },
      });
      await b.api('POST', `${a}/${created.body.action.id}/publish`, { json: { publish: true } });
      const run = await b.api('POST', `${a}/${created.body.action.id}/run`, { json: { wait: true } });
      expect(received).toEqual([]);
      expect(run.status).toBe(422);
      expect(JSON.stringify(run.body)).toMatch(/private network/);
    } finally {
      await b.close();
    }
  });
});

describe('data source web hooks', () => {
  for (const policy of ['allow', 'deny'] as const) {
    it(`${policy}: a hook to a local address is ${policy === 'allow' ? 'called' : 'refused and logged'}; the write is kept`, async () => {
      const b = await startTestBackend(policy === 'deny' ? { limits: { outboundPrivateNetworks: 'deny' } } : {});
      try {
        received.length = 0;
        const path = `/hook-${policy}`;
        const ds = await b.api('POST', `/v1/data-sources?appId=${b.server.bootstrap.appId}`, {
          json: { name: 'Hooked', hooks: [{ type: 'web', runOn: ['insert'], payload: { url: `${targetUrl}${path}` } }] },
        });
        expect(ds.status).toBe(201);
        const id = ds.body.dataSource.id;
        expect((await b.api('PUT', `/v1/data-sources/${id}/data`, { json: { a: 1 } })).status).toBe(201);
        if (policy === 'allow') {
          await eventually(async () => received.includes(`POST ${path}`));
        } else {
          const logs = await eventually(async () => {
            const res = await b.api('GET', `/v1/data-sources/${id}/logs?type=dataSource.hook.failed`, { token: b.server.bootstrap.studioToken });
            return res.body.logs.length > 0 && res.body.logs;
          });
          expect(logs[0].data.error).toMatch(/private network/);
          expect(received).toEqual([]);
        }
        expect((await b.api('POST', `/v1/data-sources/${id}/data/query`, { json: {} })).body.entries).toHaveLength(1);
      } finally {
        await b.close();
      }
    });
  }
});
