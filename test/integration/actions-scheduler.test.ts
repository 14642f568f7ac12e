import { createServer, type Server } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ActionLog } from '../../src/contract/actions.js';
import { startTestBackend, type TestBackend } from '../helpers/server.js';
import { eventually } from '../helpers/wait.js';

const fn = (name: string, settings: Record<string, unknown>) => ({ functionPackage: `com.client.function.${name}`, settings });
const iso = (t: number) => new Date(t).toISOString();

/** A local HTTP endpoint whose answers wait until `open()`: keeps runs "running" without blocking the event loop. */
let gate: { server: Server; url: string; open(): void; close(): void; hits: number };
beforeAll(async () => {
  let waiting: (() => void)[] = [];
  let opened = false;
  const server = createServer((_req, res) => {
    gate.hits++;
    const answer = () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    if (opened) answer();
    else waiting.push(answer);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  gate = {
    server,
    url: `http://127.0.0.1:${port}/`,
    hits: 0,
    open() {
      opened = true;
      waiting.forEach((w) => w());
      waiting = [];
    },
    close() {
      opened = false;
    },
  };
});
afterAll(() => new Promise<void>((r) => gate.server.close(() => r())));

async function scheduledLogs(b: TestBackend, actionId: number): Promise<ActionLog[]> {
  return (await b.client.App.Actions.getLogs({ id: actionId, limit: 1000 })).logs;
}

async function nextRunAt(b: TestBackend, id: number): Promise<string | null> {
  return (await b.client.App.Actions.get()).find((a) => a.id === id)!.nextRunAt;
}

describe('scheduler in five time zones (fake clock)', () => {
  const cases: { zone: string; cron: string; from: string; fires: string[]; silentAt?: string[] }[] = [
    {
      zone: 'America/New_York',
      cron: '30 2 * * *',
      from: '2025-03-08T12:00:00Z',
      fires: ['2025-03-09T07:00:00.000Z', '2025-03-10T06:30:00.000Z', '2025-03-11T06:30:00.000Z'],
    },
    {
      zone: 'America/New_York',
      cron: '30 1 * * *',
      from: '2025-11-01T12:00:00Z',
      fires: ['2025-11-02T05:30:00.000Z', '2025-11-03T06:30:00.000Z'],
      silentAt: ['2025-11-02T06:30:00.000Z'],
    },
    { zone: 'Europe/Dublin', cron: '30 1 * * *', from: '2025-03-29T12:00:00Z', fires: ['2025-03-30T01:00:00.000Z', '2025-03-31T00:30:00.000Z'] },
    {
      zone: 'Europe/Berlin',
      cron: '30 2 * * *',
      from: '2025-10-25T12:00:00Z',
      fires: ['2025-10-26T00:30:00.000Z', '2025-10-27T01:30:00.000Z'],
      silentAt: ['2025-10-26T01:30:00.000Z'],
    },
    { zone: 'Australia/Melbourne', cron: '30 2 * * *', from: '2025-10-04T12:00:00Z', fires: ['2025-10-04T16:00:00.000Z', '2025-10-05T15:30:00.000Z'] },
    {
      zone: 'America/Santiago',
      cron: '0 0 * * *',
      from: '2025-09-05T12:00:00Z',
      fires: ['2025-09-06T04:00:00.000Z', '2025-09-07T04:00:00.000Z', '2025-09-08T03:00:00.000Z'],
    },
  ];

  for (const c of cases) {
    it(`${c.zone} ${c.cron} from ${c.from}`, async () => {
      let now = Date.parse(c.from);
      const b = await startTestBackend({ clock: () => now });
      try {
        const action = await b.client.App.Actions.create({
          name: 'tick',
          frequency: c.cron,
          timezone: c.zone,
          triggers: [{ trigger: 'schedule' }],
          functions: [fn('return', { value: '{{ scheduledAt }}' })],
        });
        const published = await b.client.App.Actions.publish(action.id, true);
        expect(published.nextRunAt).toBe(c.fires[0]);
        const silent = new Set(c.silentAt ?? []);
        const moments = [...c.fires, ...silent].sort();
        let fired = 0;
        for (const moment of moments) {
          now = Date.parse(moment);
          await b.server.tick();
          if (silent.has(moment)) {
            await new Promise((r) => setTimeout(r, 200));
            expect((await scheduledLogs(b, action.id)).length, `nothing at ${moment}`).toBe(fired);
            continue;
          }
          fired++;
          const logs = await eventually(async () => {
            const l = await scheduledLogs(b, action.id);
            return l.length === fired && l;
          });
          expect(logs[0]!.type).toBe('app.task.completed');
          expect(logs[0]!.data.mode).toBe('scheduled');
          expect(logs[0]!.data.result).toBe(moment);
          const index = c.fires.indexOf(moment);
          if (index + 1 < c.fires.length) expect(await nextRunAt(b, action.id)).toBe(c.fires[index + 1]);
        }
        // Ticking again at the same instant fires nothing more.
        await b.server.tick();
        await new Promise((r) => setTimeout(r, 100));
        expect((await scheduledLogs(b, action.id)).length).toBe(c.fires.length);
      } finally {
        await b.close();
      }
    });
  }
});

describe('scheduler policies', () => {
  it('unpublish stops scheduled runs; inactive actions have no nextRunAt', async () => {
    let now = Date.parse('2025-01-01T10:10:00Z');
    const b = await startTestBackend({ clock: () => now });
    try {
      const a = await b.client.App.Actions.create({
        name: 'h',
        frequency: '0 * * * *',
        triggers: [{ trigger: 'schedule' }],
        functions: [fn('return', { value: 1 })],
      });
      await b.client.App.Actions.publish(a.id, true);
      expect(await nextRunAt(b, a.id)).toBe('2025-01-01T11:00:00.000Z');
      await b.client.App.Actions.publish(a.id, false);
      expect(await nextRunAt(b, a.id)).toBeNull();
      now = Date.parse('2025-01-01T11:00:00Z');
      await b.server.tick();
      await new Promise((r) => setTimeout(r, 200));
      expect(await scheduledLogs(b, a.id)).toHaveLength(0);
    } finally {
      await b.close();
    }
  });

  it('missed occurrences coalesce into one run by default; skip runs none and logs the skip', async () => {
    let now = Date.parse('2025-01-01T10:10:00Z');
    const b = await startTestBackend({ clock: () => now });
    try {
      const base = {
        frequency: '0 * * * *',
        triggers: [{ trigger: 'schedule' as const }],
        functions: [fn('return', { value: '{{ scheduledAt }}/{{ missed }}' })],
      };
      const co = await b.client.App.Actions.create({ name: 'co', ...base });
      const sk = await b.client.App.Actions.create({ name: 'sk', ...base, missedRuns: 'skip' });
      await b.client.App.Actions.publish(co.id, true);
      await b.client.App.Actions.publish(sk.id, true);
      now = Date.parse('2025-01-01T14:20:00Z'); // 11:00, 12:00, 13:00 and 14:00 were missed
      await b.server.tick();
      const logs = await eventually(async () => {
        const l = await scheduledLogs(b, co.id);
        return l.length === 1 && l;
      });
      expect(logs[0]!.data.result).toBe('2025-01-01T14:00:00.000Z/3');
      expect(await nextRunAt(b, co.id)).toBe('2025-01-01T15:00:00.000Z');
      expect(await nextRunAt(b, sk.id)).toBe('2025-01-01T15:00:00.000Z');
      expect(await scheduledLogs(b, sk.id)).toHaveLength(0);
      expect((await b.client.App.Actions.getLogs({ id: sk.id })).count).toBe(0);
      const skipped = await b.client.App.Actions.getLogs({ id: sk.id, where: { type: 'app.task.skipped' } });
      expect(skipped.logs).toHaveLength(1);
      expect(skipped.logs[0]!.data.result).toEqual({ reason: 'missed', scheduledAt: '2025-01-01T14:00:00.000Z', count: 4 });
      // On time (within the grace period), the skip policy runs the occurrence.
      now = Date.parse('2025-01-01T15:00:10Z');
      await b.server.tick();
      await eventually(async () => (await scheduledLogs(b, sk.id)).length === 1);
    } finally {
      await b.close();
    }
  });

  it('skips (and logs) an occurrence while the previous run of the action is still running', async () => {
    let now = Date.parse('2025-01-01T10:10:00Z');
    const b = await startTestBackend({ clock: () => now });
    gate.close();
    try {
      const a = await b.client.App.Actions.create({
        name: 'slow',
        frequency: '0 * * * *',
        triggers: [{ trigger: 'schedule' }],
        functions: [fn('http-request', { url: gate.url }), fn('return', { value: '{{ scheduledAt }}' })],
      });
      await b.client.App.Actions.publish(a.id, true);
      const hits = gate.hits;
      now = Date.parse('2025-01-01T11:00:00Z');
      await b.server.tick();
      await eventually(async () => gate.hits > hits);
      now = Date.parse('2025-01-01T12:00:00Z');
      await b.server.tick();
      const skipped = await b.client.App.Actions.getLogs({ id: a.id, where: { type: 'app.task.skipped' } });
      expect(skipped.logs.map((l) => l.data.result)).toEqual([{ reason: 'overlap', scheduledAt: '2025-01-01T12:00:00.000Z', count: 1 }]);
      expect(await nextRunAt(b, a.id)).toBe('2025-01-01T13:00:00.000Z');
      gate.open();
      const logs = await eventually(async () => {
        const l = await scheduledLogs(b, a.id);
        return l.length === 1 && l;
      });
      expect(logs[0]!.data.result).toBe('2025-01-01T11:00:00.000Z');
      const page = await b.api('POST', `/v1/apps/${b.server.bootstrap.appId}/tasks/logs`, { json: { id: a.id } });
      expect(page.body.count).toBe(1);
    } finally {
      gate.close();
      await b.close();
    }
  });

  it('a restart loses no queued run and fires no occurrence twice', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'actions-restart-'));
    let now = Date.parse('2025-01-01T10:10:00Z');
    gate.close();
    try {
      let b = await startTestBackend({ clock: () => now, dataDir });
      const appId = b.server.bootstrap.appId;
      const manual = await b.client.App.Actions.create({
        name: 'manual',
        functions: [fn('http-request', { url: gate.url }), fn('return', { value: '{{ n }}' })],
      });
      await b.client.App.Actions.publish(manual.id, true);
      const sched = await b.client.App.Actions.create({
        name: 'sched',
        frequency: '0 * * * *',
        triggers: [{ trigger: 'schedule' }],
        functions: [fn('http-request', { url: gate.url }), fn('return', { value: '{{ scheduledAt }}' })],
      });
      await b.client.App.Actions.publish(sched.id, true);
      for (let n = 0; n < 6; n++) await b.client.App.Actions.run('manual', { n });
      now = Date.parse('2025-01-01T11:00:00Z');
      await b.server.tick();
      await eventually(async () => gate.hits > 0);
      await b.close();

      gate.open();
      b = await startTestBackend({ clock: () => now, dataDir });
      expect(b.server.bootstrap.appId).toBe(appId);
      await b.server.tick();
      const manualLogs = await eventually(async () => {
        const l = await b.client.App.Actions.getLogs({ id: manual.id, limit: 100 });
        return l.count === 6 && l;
      }, 15_000);
      expect(manualLogs.logs.map((l) => l.data.result).sort()).toEqual([0, 1, 2, 3, 4, 5]);
      const schedLogs = await eventually(async () => {
        const l = await scheduledLogs(b, sched.id);
        return l.length === 1 && l;
      });
      expect(schedLogs[0]!.data.result).toBe('2025-01-01T11:00:00.000Z');
      await b.server.tick();
      await new Promise((r) => setTimeout(r, 300));
      expect(await scheduledLogs(b, sched.id)).toHaveLength(1);
      expect((await b.client.App.Actions.getLogs({ id: manual.id, limit: 100 })).count).toBe(6);
      await b.close();
    } finally {
      gate.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
void iso;
