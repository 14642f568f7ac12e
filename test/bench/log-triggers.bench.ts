/**
 * Entry writes of an app with live actions (log triggers): every entry written reads the app's live actions and
 * tests their log triggers. 2,000 single inserts over HTTP into an app with 30 live server actions (10 nodes each,
 * a log trigger that matches nothing), against the same inserts into an app with none (the baseline, same run,
 * a backend of its own each, alternated twice).
 */
import { loadavg } from 'node:os';
import { test } from 'vitest';
import { startTestBackend } from '../helpers/server.js';

const INSERTS = 2000;

async function inserts(actions: number): Promise<number> {
  const b = await startTestBackend({ limits: { runsPerMinute: 1_000_000 } });
  try {
    await b.studio.DataSources.create({ name: 'rows' });
    for (let i = 0; i < actions; i++) {
      const a = await b.client.App.Actions.create({
        name: `a${i}`,
        environment: 'server',
        triggers: [{ trigger: 'log', where: { dataSourceId: -1 } }],
        functions: Array.from({ length: 10 }, (_, k) => ({ functionPackage: 'com.client.function.set', settings: { [`v${k}`]: `{{ ${k} + 1 }}` } })),
      });
      await b.client.App.Actions.publish(a.id, true);
    }
    const ds = await b.client.DataSources.connect('rows');
    for (let i = 0; i < 100; i++) await ds.insert({ n: i });
    const start = performance.now();
    for (let i = 0; i < INSERTS; i++) await ds.insert({ n: i });
    return (performance.now() - start) / INSERTS;
  } finally {
    await b.close();
  }
}

test('entry writes with live log triggers', async () => {
  const none: number[] = [];
  const thirty: number[] = [];
  for (let round = 0; round < 2; round++) {
    none.push(await inserts(0));
    thirty.push(await inserts(30));
  }
  const best = (xs: number[]) => Math.min(...xs);
  console.log(
    `\nEntry writes with live actions (load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')})\n`,
  );
  console.table([
    { measurement: 'insert one entry, no live actions (baseline)', 'ms per insert': +best(none).toFixed(3), ratio: 1 },
    {
      measurement: 'insert one entry, 30 live server actions with a log trigger',
      'ms per insert': +best(thirty).toFixed(3),
      ratio: +(best(thirty) / best(none)).toFixed(2),
    },
  ]);
  console.log(
    'rounds',
    JSON.stringify({ none, thirty }, (_k, v) => (typeof v === 'number' ? +v.toFixed(3) : v)),
  );
}, 600_000);
