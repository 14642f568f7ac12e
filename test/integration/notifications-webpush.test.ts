import { createDecipheriv, createECDH, hkdfSync, randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { Agent, createServer, type Server } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import webpush from 'web-push';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWebPushSender } from '../../src/server/notifications/index.js';
import { startTestBackend, type TestBackend } from '../helpers/server.js';

/** Decrypts an aes128gcm Web Push body (RFC 8188 / RFC 8291) as the browser would. */
function decrypt(body: Buffer, ua: ReturnType<typeof createECDH>, authSecret: Buffer): string {
  const salt = body.subarray(0, 16);
  const idLength = body.readUInt8(20);
  const serverPublic = body.subarray(21, 21 + idLength);
  const ciphertext = body.subarray(21 + idLength);
  const shared = ua.computeSecret(serverPublic);
  const keyInfo = Buffer.concat([Buffer.from('WebPush: info\0'), ua.getPublicKey(), serverPublic]);
  const ikm = Buffer.from(hkdfSync('sha256', shared, authSecret, keyInfo, 32));
  const cek = Buffer.from(hkdfSync('sha256', ikm, salt, Buffer.from('Content-Encoding: aes128gcm\0'), 16));
  const nonce = Buffer.from(hkdfSync('sha256', ikm, salt, Buffer.from('Content-Encoding: nonce\0'), 12));
  const decipher = createDecipheriv('aes-128-gcm', cek, nonce);
  decipher.setAuthTag(ciphertext.subarray(ciphertext.length - 16));
  const plain = Buffer.concat([decipher.update(ciphertext.subarray(0, ciphertext.length - 16)), decipher.final()]);
  return plain.subarray(0, plain.lastIndexOf(2)).toString('utf8');
}

describe('Web Push sender against a local push service', () => {
  let dir: string;
  let pushService: Server;
  let pushUrl: string;
  let status = 201;
  const received: { path: string; headers: Record<string, string | string[] | undefined>; body: Buffer }[] = [];
  let b: TestBackend;
  const vapid = { ...webpush.generateVAPIDKeys(), subject: 'mailto:test@example.com' };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'iar-webpush-'));
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-days',
        '1',
        '-keyout',
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem'),
        '-subj',
        '/CN=127.0.0.1',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
      ],
      { stdio: 'ignore' },
    );
    const cert = readFileSync(join(dir, 'cert.pem'));
    pushService = createServer({ key: readFileSync(join(dir, 'key.pem')), cert }, (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        received.push({ path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks) });
        res.writeHead(status).end();
      });
    });
    await new Promise<void>((resolve) => pushService.listen(0, '127.0.0.1', resolve));
    pushUrl = `https://127.0.0.1:${(pushService.address() as { port: number }).port}`;
    const sender = createWebPushSender(async () => vapid, { agent: new Agent({ ca: cert }) });
    b = await startTestBackend({ pushSender: sender });
  });
  afterAll(async () => {
    await b?.close();
    pushService?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('sends an encrypted, VAPID-signed push the browser can decrypt, with the badge and topic', async () => {
    const ua = createECDH('prime256v1');
    ua.generateKeys();
    const auth = randomBytes(16);
    const token = JSON.stringify({ endpoint: `${pushUrl}/push/abc`, keys: { p256dh: ua.getPublicKey('base64url'), auth: auth.toString('base64url') } });
    expect((await b.api('GET', `/v1/apps/${b.server.bootstrap.appId}/subscriptions/public-key`)).body.publicKey).toBe(vapid.publicKey);
    await b.client.Notifications.subscribe({ token, uuid: '00000000-0000-4000-8000-000000000001' });
    const n = await b.studio.Notifications.create({
      data: {},
      status: 'published',
      pushNotification: { payload: { title: 'Hello', body: 'World', url: '/inbox' } },
    });
    await b.server.tick();
    expect(received).toHaveLength(1);
    const [push] = received;
    expect(push!.path).toBe('/push/abc');
    expect(push!.headers['content-encoding']).toBe('aes128gcm');
    expect(String(push!.headers.authorization)).toMatch(new RegExp(`^vapid t=.+, k=${vapid.publicKey}$`));
    expect(push!.headers.ttl).toBe(String(24 * 3600));
    expect(push!.headers.topic).toMatch(/^d\d+$/);
    expect(JSON.parse(decrypt(push!.body, ua, auth))).toEqual({ title: 'Hello', body: 'World', url: '/inbox', badge: 1, notificationId: n.id });
  });

  it('a 410 from the push service fails the delivery at once and removes the subscription; a non-web token fails permanently', async () => {
    status = 410;
    const ua = createECDH('prime256v1');
    ua.generateKeys();
    const token = JSON.stringify({
      endpoint: `${pushUrl}/push/gone`,
      keys: { p256dh: ua.getPublicKey('base64url'), auth: randomBytes(16).toString('base64url') },
    });
    const gone = await b.client.Notifications.subscribe({ token, uuid: '00000000-0000-4000-8000-000000000002' });
    const native = await b.client.Notifications.subscribe({ token: 'apns-device-token', platform: 'ios', uuid: '00000000-0000-4000-8000-000000000003' });
    const appId = b.server.bootstrap.appId;
    const studio = { token: b.server.bootstrap.studioToken };
    const deliveries = async (id: number) => {
      const res = await b.api('GET', `/v1/apps/${appId}/notifications/${id}/deliveries`, studio);
      return Object.fromEntries(res.body.deliveries.map((d: { subscriptionId: number }) => [d.subscriptionId, d]));
    };
    // A push for later is waiting for the same subscription when the push service says it is gone.
    const later = await b.studio.Notifications.create({
      data: {},
      status: 'published',
      pushNotification: { payload: { title: 'later', body: 'b' }, subscriptions: [gone.id], delayUntilTimestamp: Math.floor(Date.now() / 1000) + 3600 },
    });
    const n = await b.studio.Notifications.create({
      data: {},
      status: 'published',
      pushNotification: { payload: { title: 't', body: 'b' }, subscriptions: [gone.id, native.id] },
    });
    const sentBefore = received.length;
    await b.server.tick();
    expect(received.length - sentBefore).toBe(1);
    const bySub = await deliveries(n.id);
    expect(bySub[gone.id]).toMatchObject({ state: 'failed', attempts: 1 });
    expect(bySub[gone.id].lastError).toContain('410');
    expect(bySub[native.id]).toMatchObject({ state: 'failed', attempts: 1 });
    expect(bySub[native.id].lastError).toContain('no Web Push token');

    // The gone subscription is removed with its waiting push; the native one (not refused by a push service) stays.
    const ids = (await b.api('GET', `/v1/apps/${appId}/subscriptions`, studio)).body.subscriptions.map((s: { id: number }) => s.id);
    expect(ids).not.toContain(gone.id);
    expect(ids).toContain(native.id);
    expect((await deliveries(later.id))[gone.id]).toMatchObject({ state: 'cancelled', attempts: 0 });
    const broadcast = await b.studio.Notifications.create({ data: {}, status: 'published', pushNotification: { payload: { title: 'all', body: 'b' } } });
    await b.server.tick();
    expect(Object.keys(await deliveries(broadcast.id)).map(Number)).not.toContain(gone.id);
  });
});
