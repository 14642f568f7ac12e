import { afterEach, describe, expect, it } from 'vitest';
import { createApp } from '../../src/server/app.js';
import { DEFAULT_SERVER_LIMITS, type ServerContext } from '../../src/server/context.js';
import { migrate } from '../../src/server/db/migrate.js';
import { migrations } from '../../src/server/db/migrations/index.js';
import { openStore, type OpenedStore } from '../../src/server/db/open.js';
import { createRecordingPushSender } from '../../src/server/notifications/recording-sender.js';
import { createServices } from '../../src/server/services.js';

/**
 * Issue 17, "explicit lifecycles": startServer builds the services (src/server/services.ts), gives them to the
 * routes and to server runs, then starts them. Building the services and registering every route start nothing:
 * no timer or hook with the server's tick and close, no bus listener, no thread, no database write. `start()`
 * starts the background parts, and the server's close stops them.
 */
describe('server lifecycle: built, then started, then stopped', () => {
  let store: OpenedStore | undefined;
  afterEach(async () => {
    await store?.stopBus();
    await store?.db.close();
    store = undefined;
  });

  async function context() {
    store = await openStore({ sqlite: { memory: true } });
    await migrate(store.db, migrations);
    const closers: (() => void | Promise<void>)[] = [];
    const tickers: (() => Promise<void>)[] = [];
    const events: unknown[] = [];
    const bus = store.bus;
    const ctx: ServerContext = {
      db: store.db,
      clock: () => Date.now(),
      nowIso: () => new Date().toISOString(),
      limits: { ...DEFAULT_SERVER_LIMITS, runThreads: 1 },
      dataDir: undefined,
      instanceId: store.instanceId,
      url: () => 'http://127.0.0.1:0',
      publicUrl: () => 'http://127.0.0.1:0',
      // Counts the listeners the services add to the event bus.
      bus: { ...bus, on: (fn) => (events.push(fn), bus.on(fn)) },
      pushSender: createRecordingPushSender(),
      onClose: (fn) => void closers.push(fn),
      onTick: (fn) => void tickers.push(fn),
    };
    const settings = async () => (await store!.db.all<{ key: string }>('SELECT key FROM settings')).map((r) => r.key);
    return { ctx, closers, tickers, events, settings };
  }

  it('building the services and registering the routes starts nothing', async () => {
    const { ctx, closers, tickers, events, settings } = await context();
    const before = await settings();
    const services = createServices(ctx);
    const app = createApp(ctx, services);
    expect(app.routes.length).toBeGreaterThan(50);
    expect({ closers: closers.length, tickers: tickers.length, listeners: events.length }).toEqual({ closers: 0, tickers: 0, listeners: 0 });
    expect(services.actions.pool?.threads()).toEqual([]);
    await new Promise((r) => setTimeout(r, 50));
    expect(await settings()).toEqual(before); // no VAPID keys written, nothing else either
  });

  it('start() starts the worker, scheduler, log triggers, notification loop and prunes; close stops them', async () => {
    const { ctx, closers, tickers, events } = await context();
    const services = createServices(ctx);
    createApp(ctx, services);
    services.start();
    services.start(); // once
    expect(events.length).toBe(1); // the log-trigger listener
    // The scheduler, the notification loop and the two prunes run with the server's tick.
    expect(tickers.length).toBe(4);
    for (const tick of tickers) await tick();
    // Actions, notifications, web hooks, automatic indexes, the two prunes.
    expect(closers.length).toBe(6);
    for (const close of closers.reverse()) await close();
    expect(services.actions.pool?.threads()).toEqual([]);
  });
});
