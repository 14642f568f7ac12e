import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Action, ActionTrigger } from '../../src/contract/actions.js';
import type { AnalyticsEvent } from '../../src/analytics/types.js';
import type { Chunks } from '../../src/core/lazy-import.js';

/**
 * The lazy chunks of client.js as the script-tag build sees them: src/core/lazy-import.ts is replaced by a twin
 * that has nothing bundled and imports each chunk when asked (here from the source, after a gate the test opens,
 * or failing), like lazy-import.browser.ts does from a URL.
 */
const imports = vi.hoisted(() => ({ requested: [] as string[], gate: undefined as Promise<void> | undefined, fail: new Set<string>() }));

vi.mock('../../src/core/lazy-import.js', async () => {
  const real = await vi.importActual<typeof import('../../src/core/lazy-import.js')>('../../src/core/lazy-import.js');
  return {
    CHUNKS_BUNDLED: false,
    bundledChunk: () => undefined,
    async importChunk(key: keyof Chunks, url: string | undefined) {
      imports.requested.push(`${key} ${url}`);
      await imports.gate;
      if (imports.fail.has(key)) throw new TypeError(`Failed to fetch dynamically imported module: ${url}`);
      return real.importChunk(key, url).then((m) => m ?? real.bundledChunk(key));
    },
  };
});

const { createDispatcher } = await import('../../src/analytics/dispatcher.js');
const { loadChunk, loadedChunk } = await import('../../src/core/lazy.js');
const { createClient, isClientError } = await import('../../src/index.js');

let nextId = 1;
function action(triggers: ActionTrigger[]): Action {
  const id = nextId++;
  return {
    id,
    appId: 1,
    name: `action-${id}`,
    active: true,
    published: true,
    publishedAt: null,
    lastRunAt: null,
    nextRunAt: null,
    createdAt: '2030-01-01T00:00:00.000Z',
    updatedAt: '2030-01-01T00:00:00.000Z',
    frequency: null,
    timezone: 'UTC',
    environment: 'client',
    triggers,
    functions: [],
    pageId: null,
    missedRuns: 'coalesce',
  };
}
const event = (data: Record<string, unknown>): AnalyticsEvent => ({ type: 'analytics.event', data, createdAt: '2030-01-01T00:00:00.000Z' });

function logger() {
  const lines: string[] = [];
  const log = (level: string) => (m: string) => void lines.push(`${level}: ${m}`);
  return { lines, logger: { debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error') } };
}

function deferred() {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

afterEach(() => {
  imports.requested.length = 0;
  imports.gate = undefined;
  imports.fail.clear();
});

describe('lazy chunks of client.js (the script-tag build, mocked in Node)', () => {
  it('analytics triggers without a where never load sift; one with a where holds events until the query chunk is there', async () => {
    const { logger: log } = logger();
    const runs: string[] = [];
    const dispatcher = createDispatcher({
      run: async (a) => void runs.push(a.name),
      logger: log,
      environment: 'live',
      assetsUrl: () => 'https://cdn.test/iar/',
    });
    const plain = action([{ trigger: 'analytics' }]);
    dispatcher.setActions([plain]);
    expect(dispatcher.ready).toBe(true);
    expect(dispatcher.dispatch(event({ category: 'a', action: 'b' }))).toBe(1);
    await dispatcher.idle();
    expect(imports.requested).toEqual([]);

    // A new list with a where: the old list stays in force until the query chunk has loaded.
    const gate = deferred();
    imports.gate = gate.promise;
    const withWhere = action([{ trigger: 'analytics', where: { type: 'analytics.event', data: { category: 'form', tags: { $in: ['x'] } } } }]);
    dispatcher.setActions([withWhere]);
    expect(imports.requested).toEqual(['query https://cdn.test/iar/query.mjs']);
    expect(dispatcher.dispatch(event({ category: 'form', tags: ['x'] }))).toBe(1); // matched by the old list (plain)
    gate.open();
    await vi.waitFor(() => expect(loadedChunk('query')).toBeDefined());
    await vi.waitFor(() => expect(dispatcher.match(event({ category: 'form', tags: ['x'] })).map((a) => a.name)).toEqual([withWhere.name]));
    expect(dispatcher.match(event({ category: 'form', tags: ['y'] }))).toEqual([]);
    await dispatcher.idle();
    expect(runs).toEqual([plain.name, plain.name]);
  });

  it('a chunk that cannot load rejects with CHUNK_UNAVAILABLE and is tried again by the next call', async () => {
    imports.fail.add('validate');
    const error = await loadChunk('validate', 'https://cdn.test/iar').catch((e: unknown) => e);
    expect(isClientError(error)).toBe(true);
    expect((error as { code: string }).code).toBe('CHUNK_UNAVAILABLE');
    expect((error as Error).message).toContain('https://cdn.test/iar/validate.mjs');
    imports.fail.clear();
    expect(typeof (await loadChunk('validate', 'https://cdn.test/iar')).validateActionInput).toBe('function');
    expect(imports.requested).toEqual(['validate https://cdn.test/iar/validate.mjs', 'validate https://cdn.test/iar/validate.mjs']);
  });

  it('Actions.create awaits the lazily loaded validator: the same typed INVALID_ACTION error, nothing sent', async () => {
    const fetch = vi.fn(async () => new Response('{}', { status: 500 }));
    const client = createClient({ baseUrl: 'https://api.test', appId: 1, fetch, assetsUrl: 'https://cdn.test/iar/' });
    const error = await client.App.Actions.create({ name: '123', functions: [{ type: 'loop' }] } as never).catch((e: unknown) => e);
    expect(isClientError(error)).toBe(true);
    expect((error as { code: string }).code).toBe('INVALID_ACTION');
    const issues = (error as { details: { issues: { path: string }[] } }).details.issues;
    expect(issues.map((i) => i.path)).toEqual(['name', 'functions[0]']);
    expect(fetch).not.toHaveBeenCalled();
    // The pipeline chunk: Pipeline.run is a plain function returning a promise; a bad pipeline is its INVALID_ARGUMENT.
    const run = client.App.Actions.Pipeline.run;
    const pending = run({ pipeline: 'nope' as never });
    expect(pending).toBeInstanceOf(Promise);
    await expect(pending).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', name: 'ClientError' });
  });
});
