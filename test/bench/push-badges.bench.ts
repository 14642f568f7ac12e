import { it } from 'vitest';
import { createRecordingPushSender } from '../../src/server/index.js';
import { startTestBackend } from '../helpers/server.js';

/**
 * The automatic badge of a push is the recipient's unread count, computed per delivery. A broadcast push to
 * `BENCH_SUBSCRIBERS` subscribers (each with a user record, so scoped notifications are tested against it) of an app
 * holding `BENCH_NOTIFICATIONS` published notifications (a tenth of them scoped): the time of the tick that delivers
 * them, per delivery. Baseline in the same run: the same broadcast with a fixed badge (no count).
 */
const SUBSCRIBERS = Number(process.env.BENCH_SUBSCRIBERS ?? 200);
const NOTIFICATIONS = Number(process.env.BENCH_NOTIFICATIONS ?? 5_000);
const guid = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;

it(`push badges: a broadcast to ${SUBSCRIBERS} subscribers of an app with ${NOTIFICATIONS.toLocaleString('en')} notifications`, async () => {
  const sender = createRecordingPushSender();
  const b = await startTestBackend({ pushSender: sender });
  try {
    for (let i = 0; i < SUBSCRIBERS; i++)
      await b.client.Notifications.subscribe({ token: `t${i}`, platform: 'web', device: `d${i}`, uuid: guid(i + 1), user: { email: `u${i}@x.io` } });
    for (let start = 0; start < NOTIFICATIONS; start += 100)
      await b.studio.Notifications.batch(
        Array.from({ length: Math.min(100, NOTIFICATIONS - start) }, (_, k) => {
          const i = start + k;
          return i % 10 === 0 ? { data: { i }, status: 'published', scope: { email: `u${i % SUBSCRIBERS}@x.io` } } : { data: { i }, status: 'published' };
        }),
      );
    const timeBroadcast = async (badge?: number) => {
      const before = sender.sent.length;
      await b.studio.Notifications.create({
        data: {},
        status: 'published',
        pushNotification: { payload: { title: 'x', body: 'y', ...(badge === undefined ? {} : { badge }) } },
      });
      const t = performance.now();
      while (sender.sent.length - before < SUBSCRIBERS) await b.server.tick();
      return (performance.now() - t) / SUBSCRIBERS;
    };
    await timeBroadcast(1);
    const fixed = [await timeBroadcast(1), await timeBroadcast(1), await timeBroadcast(1)].sort((x, y) => x - y)[1]!;
    const counted = [await timeBroadcast(), await timeBroadcast(), await timeBroadcast()].sort((x, y) => x - y)[1]!;
    console.log(
      [
        `### Push badges: ${SUBSCRIBERS} subscribers, ${NOTIFICATIONS.toLocaleString('en')} published notifications (a tenth scoped), median of 3`,
        '| badge | ms per delivery |',
        '| --- | --- |',
        `| fixed (\`badge: 1\`, no count) | ${fixed.toFixed(2)} |`,
        `| automatic (the recipient's unread count) | ${counted.toFixed(2)} |`,
      ].join('\n'),
    );
  } finally {
    await b.close();
  }
}, 900_000);
