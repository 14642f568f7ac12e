import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileQuery } from '../../src/server/data-sources/query/compile.js';
import { planSqlSelect, selectStatement } from '../../src/server/data-sources/sql/select.js';
import { openPostgres, type PostgresDatabase } from '../../src/server/db/postgres.js';
import { translateToPostgres } from '../../src/server/db/sql-dialect.js';
import { createTestDatabase } from '../helpers/postgres.js';
import { entryData, queryBody, seededRandom } from '../helpers/query-generator.js';
import { startTestBackend, type TestBackend } from '../helpers/server.js';

/**
 * The backend's PostgreSQL connections run with `jit = off` (src/server/db/postgres.ts SESSION_DEFAULTS): the
 * translated selects over jsonb looked expensive to the planner, so PostgreSQL compiled most of them with LLVM
 * before running them (56x slower over a small data source). A plain connection, as a control, still compiles them.
 */
const jitted = (rows: Record<string, unknown>[]) => (rows[0]!['QUERY PLAN'] as { JIT?: unknown }[])[0]!.JIT !== undefined;

describe('PostgreSQL: translated selects are not JIT-compiled', () => {
  let b: TestBackend;
  let url: string;
  let drop: () => Promise<void>;
  let db: PostgresDatabase;
  let control: pg.Client;

  beforeAll(async () => {
    ({ url, drop } = await createTestDatabase('iar_jit'));
    b = await startTestBackend({ databaseUrl: url });
    db = openPostgres({ url, max: 1 });
    control = new pg.Client({ connectionString: url });
    await control.connect();
    await control.query('SET jit = on');
  });

  afterAll(async () => {
    await control?.end();
    await db?.close();
    await b?.close();
    await drop?.();
  });

  it('the backend runs them without JIT; a session with JIT on compiles some', async () => {
    const rng = seededRandom(20240514);
    const ds = await b.client.DataSources.create({ name: 'Jit' });
    await (await b.client.DataSources.connect(ds.id)).import(Array.from({ length: 470 }, () => entryData(rng)));
    await db.query('ANALYZE data_source_entries');
    const queries = seededRandom(20240515);
    let translated = 0;
    let controlJitted = 0;
    for (let i = 0; i < 40 && translated < 20; i++) {
      const plan = planSqlSelect(compileQuery(queryBody(queries, { maxId: 1000, times: ['2024-03-01'] })));
      if (!plan) continue;
      const statement = selectStatement('postgres', ds.id, plan);
      const explain = `EXPLAIN (ANALYZE, FORMAT JSON) ${translateToPostgres(statement.text).text}`;
      expect({ i, jit: jitted(await db.query(explain, statement.params)) }).toEqual({ i, jit: false });
      if (translated++ < 5 && jitted((await control.query(explain, statement.params as unknown[])).rows)) controlJitted++;
    }
    expect(translated).toBe(20);
    // The control: these statements would be compiled (so the check above can fail).
    expect(controlJitted).toBeGreaterThan(0);
  }, 120_000);
});

describe('PostgreSQL: the session defaults are merged with the options the deployment gives', () => {
  let url: string;
  let drop: () => Promise<void>;
  beforeAll(async () => {
    ({ url, drop } = await createTestDatabase('iar_options'));
  });
  afterAll(async () => {
    await drop?.();
  });

  const show = async (db: PostgresDatabase, setting: string) => {
    const rows = await db.query<{ value: string }>(`SELECT current_setting('${setting}') AS value`);
    return rows[0]!.value;
  };
  const withUrlOptions = (options: string) => {
    const u = new URL(url);
    u.searchParams.set('options', options);
    return u.toString();
  };

  it("a URL's ?options= and PGOPTIONS are kept beside jit = off; a deployment's own jit and `settings` win", async () => {
    const fromUrl = openPostgres({ url: withUrlOptions('-c statement_timeout=4321'), max: 1 });
    const jitOn = openPostgres({ url: withUrlOptions('-c jit=on'), max: 1 });
    const settings = openPostgres({ url: withUrlOptions('-c statement_timeout=4321'), max: 1, settings: { statement_timeout: 999 } });
    const saved = process.env.PGOPTIONS;
    process.env.PGOPTIONS = '-c lock_timeout=2345';
    const fromEnv = openPostgres({ url, max: 1 });
    if (saved === undefined) delete process.env.PGOPTIONS;
    else process.env.PGOPTIONS = saved;
    try {
      expect([await show(fromUrl, 'statement_timeout'), await show(fromUrl, 'jit')]).toEqual(['4321ms', 'off']);
      expect(await show(jitOn, 'jit')).toBe('on');
      expect(await show(settings, 'statement_timeout')).toBe('999ms');
      expect([await show(fromEnv, 'lock_timeout'), await show(fromEnv, 'jit')]).toEqual(['2345ms', 'off']);
    } finally {
      await Promise.all([fromUrl.close(), jitOn.close(), settings.close(), fromEnv.close()]);
    }
  }, 60_000);
});
