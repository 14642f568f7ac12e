import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestBackend, type TestBackend } from '../helpers/server.js';
import { eventually } from '../helpers/wait.js';

/**
 * Nothing a server run writes lands after its log record (issue 15): a data source write still in flight when the
 * run ends (here, past its time limit) commits only if it finished before the backend learned of the end, else it
 * is rolled back. On PostgreSQL the commit below is still running when the run's end arrives, and is rolled back;
 * on SQLite it holds the only thread until it is done, so it lands first, and the run's end is seen after it.
 */
describe('writes of a run that ends', () => {
  let b: TestBackend;
  beforeAll(async () => {
    b = await startTestBackend({ limits: { runTimeoutMs: 1000 } });
  });
  afterAll(() => b.close());

  it('a commit still running at the time limit is not applied', async () => {
    const ds = await b.client.DataSources.create({ name: 'late' });
    // A commit far too large to finish within the run's second (it takes seconds on either database).
    const code = `const entries = []; for (let i = 0; i < 40000; i++) entries.push({ data: { n: i, text: 'entry ' + i } });
      await Client.DataSources.connect(${ds.id}).commit({ append: true, entries, returnEntries: false });
      return 'written';`;
    const action = await b.client.App.Actions.create({
      name: 'late-writer',
      functions: [{ functionPackage: 'com.client.function.script', settings: { code } }],
    });
    await b.client.App.Actions.publish(action.id, true);
    await b.client.App.Actions.run('late-writer');
    const [log] = await eventually(async () => {
      const { logs } = await b.client.App.Actions.getLogs({ id: action.id });
      return logs.length === 1 && logs;
    }, 30_000);
    // What is there when the log is there stays so: the commit, which would run on for seconds, never lands later.
    const conn = await b.client.DataSources.connect(ds.id);
    const landed = (await conn.find({ limit: 1 })).length;
    // (Here it times out; a machine fast enough to commit in time would log success, with the entries there.)
    if (log!.data.result === 'written') expect(landed).toBe(1);
    else expect(log!.data.result).toMatchObject({ code: 'TIMEOUT' });
    const until = Date.now() + 8000;
    while (Date.now() < until) {
      await new Promise((r) => setTimeout(r, 250));
      expect((await conn.find({ limit: 1 })).length).toBe(landed);
    }
  }, 60_000);
});
