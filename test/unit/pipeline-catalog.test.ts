import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestBackend, type TestBackend } from '../helpers/server.js';

let backend: TestBackend;
beforeAll(async () => {
  backend = await startTestBackend();
});
afterAll(async () => {
  delete (globalThis as { ENV?: unknown }).ENV;
  await backend?.close();
});

describe('function catalog', () => {
  test('GET tasks/functions lists the built-ins; studio tokens add custom functions with their code', async () => {
    const { appId } = backend.server.bootstrap;
    const path = `/v1/apps/${appId}/tasks/functions`;
    const first = await backend.api('GET', path);
    expect(first.status).toBe(200);
    expect(first.body.functions.map((f: { package: string }) => f.package)).toContain('com.client.function.read-datasource');
    expect(first.body.functions).toHaveLength(11);

    const code = '(settings) => ({ greeting: "hi " + settings.name })';
    const refused = await backend.api('POST', path, { json: { package: 'com.acme.function.greet', code } });
    expect(refused.status).toBe(403);
    const studioToken = backend.server.bootstrap.studioToken;
    const created = await backend.api('POST', path, {
      token: studioToken,
      json: { package: 'com.acme.function.greet', name: 'Greet', description: 'Says hi', code },
    });
    expect(created.status).toBe(201);
    expect(created.body.function).toMatchObject({ package: 'com.acme.function.greet', name: 'Greet', description: 'Says hi' });
    expect((await backend.api('POST', path, { token: studioToken, json: { package: 'com.acme.function.greet', code } })).status).toBe(409);
    expect((await backend.api('POST', path, { token: studioToken, json: { package: 'com.client.function.set', code } })).status).toBe(422);
    const bad = await backend.api('POST', path, { token: studioToken, json: { package: 'nope', code } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toContain('package');
    expect((await backend.api('POST', path, { token: studioToken, json: { package: 'com.acme.function.x' } })).status).toBe(400);

    const listed = await backend.client.App.Tasks.Functions.get();
    const greet = listed.find((f) => f.package === 'com.acme.function.greet')!;
    expect(greet).toEqual({ id: created.body.function.id, name: 'Greet', package: 'com.acme.function.greet', description: 'Says hi' });
    expect(Object.keys(listed[0]!).sort()).toEqual(['description', 'id', 'name', 'package']);
  });

  test('Functions.register adds device functions to the catalog and to Pipeline.run', async () => {
    const client = backend.client;
    expect(() => client.Functions.register('bad name', () => 1)).toThrow(/com.<vendor>.function.<name>/);
    expect(() => client.Functions.register('com.client.function.mine', () => 1)).toThrow(/reserved/);
    expect(() => client.Functions.register('com.acme.function.nocode', {} as never)).toThrow(/function or/);
    const triple = client.Functions.register('com.acme.function.triple', (settings: { n: number }) => ({ tripled: settings.n * 3 }));
    expect(triple.id).toBeLessThan(0);
    client.Functions.register('com.acme.function.describe', {
      name: 'Describe',
      description: 'From code',
      code: 'async (s, context) => ({ text: context.tripled + "!" })',
    });
    const listed = await client.App.Tasks.Functions.get();
    expect(listed.map((f) => f.package)).toEqual(expect.arrayContaining(['com.acme.function.triple', 'com.acme.function.describe']));
    expect(client.Functions.list().map((f) => f.package)).toEqual(['com.acme.function.triple', 'com.acme.function.describe']);

    (globalThis as { ENV?: unknown }).ENV = {
      taskPipeline: [
        { functionPackage: 'com.acme.function.triple', settings: { n: '{{ n }}' } },
        { functionPackage: 'com.acme.function.describe' },
        { functionPackage: 'com.client.function.return', settings: { value: '{{ [tripled, text] }}' } },
      ],
    };
    const result = await client.App.Actions.Pipeline.run({ payload: { n: 2 }, log: false });
    expect(result).toEqual([6, '6!']);
  });

  test('Pipeline.run runs the page pipeline against the real backend and rejects with the run error', async () => {
    const ds = await backend.client.DataSources.create({ name: 'pipeline-people' });
    await (await backend.client.DataSources.connect(ds.id)).insert({ name: 'Ada' });
    const pipeline = [
      { functionPackage: 'com.client.function.read-datasource', settings: { dataSourceName: 'pipeline-people' } },
      { functionPackage: 'com.client.function.insert-entry', settings: { dataSourceId: ds.id, data: { name: '{{ records[0].data.name + " II" }}' } } },
      { functionPackage: 'com.client.function.return', settings: { value: '{{ entry.data.name }}' } },
    ];
    expect(await backend.client.App.Actions.Pipeline.run({ pipeline, log: false })).toBe('Ada II');
    const entries = await (await backend.client.DataSources.connect(ds.id)).find();
    expect(entries.map((e) => e.data.name).sort()).toEqual(['Ada', 'Ada II']);

    const failing = { functions: [{ functionPackage: 'com.client.function.script', settings: { code: 'throw new RangeError("nope")' } }] };
    await expect(backend.client.App.Actions.Pipeline.run({ pipeline: failing, log: false })).rejects.toMatchObject({
      code: 'FUNCTION_FAILED',
      details: { errorType: 'RangeError' },
    });
    const outcome = await backend.client.App.Actions.Pipeline.runWithTrace({ pipeline: failing, log: false });
    expect(outcome.ok === false && outcome.error.trace[0]!.path).toBe('functions[0]');
  });
});
