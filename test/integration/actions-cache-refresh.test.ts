// @vitest-environment node
// Node, not happy-dom: the backend runs in this process, and happy-dom's Request would replace Node's in it.
import 'fake-indexeddb/auto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, type Client } from '../../src/index.js';
import { startTestBackend, type TestBackend } from '../helpers/server.js';

const quiet = { debug() {}, info() {}, warn() {}, error() {} };

describe('a client that changes its actions', () => {
  let backend: TestBackend;
  beforeAll(async () => {
    backend = await startTestBackend();
  });
  afterAll(() => backend?.close());

  async function pages(): Promise<unknown[]> {
    const ds = await backend.studio.DataSources.connect('views');
    return (await ds.find({})).map((e) => e.data.page).sort();
  }
  async function view(client: Client, pageId: number): Promise<void> {
    client.App.Analytics.pageView({ _pageId: pageId });
    await client.App.Analytics.idle();
  }

  it('applies actions it created, changed, published or removed to the next event of its screen, not 5 minutes later', async () => {
    const { appId, studioToken } = backend.server.bootstrap;
    await backend.studio.DataSources.create({ name: 'views' });
    const screen = (environment: 'live' | 'viewer') => createClient({ baseUrl: backend.url, appId, authToken: studioToken, environment, logger: quiet });
    const viewer = screen('viewer');
    const live = screen('live');
    // Both screens load their (empty) action lists with a first page view.
    await view(viewer, 1);
    await view(live, 1);

    const record = (tag: string) => ({
      functionPackage: 'com.client.function.insert-entry',
      settings: { dataSourceName: 'views', data: { page: `${tag} {{ event.data._pageId }}` } },
    });
    const onPage = (pageId: number) => [{ trigger: 'analytics' as const, where: { type: 'analytics.pageView', data: { _pageId: pageId } } }];
    const created = await viewer.App.Actions.create({ name: 'count-views', environment: 'client', triggers: onPage(2), functions: [record('created')] });
    // The viewer runs working copies: the new action fires at the next event.
    await view(viewer, 2);
    expect(await pages()).toEqual(['created 2']);

    // A changed trigger applies to the next event: page 3 fires, page 2 no longer does.
    await viewer.App.Actions.update(created.id, { triggers: onPage(3), functions: [record('updated')] });
    await view(viewer, 2);
    await view(viewer, 3);
    expect(await pages()).toEqual(['created 2', 'updated 3']);

    // The live screen runs published snapshots only: nothing until it is published, then at once.
    await view(live, 3);
    expect(await pages()).toHaveLength(2);
    await live.App.Actions.publish(created.id, true);
    await view(live, 3);
    expect(await pages()).toEqual(['created 2', 'updated 3', 'updated 3']);

    // Unpublished (live) and removed (viewer): neither screen fires it any more.
    await live.App.Actions.publish(created.id, false);
    await view(live, 3);
    await viewer.App.Actions.remove(created.id);
    await view(viewer, 3);
    expect(await pages()).toHaveLength(3);
  });
});
