import { serve, type ServerType } from '@hono/node-server';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createApp } from './app.js';
import { createServices } from './services.js';
import type { NotificationService } from './notifications/service.js';
import { errorBody } from './http/errors.js';
import { createTenant, ensureBootstrap, type Bootstrap } from './bootstrap.js';
import { checkServerStart } from './dependencies.js';
import { DEFAULT_SERVER_LIMITS, DEFAULT_SQLITE_READ_THREADS, normalizePublicUrl, type ServerContext, type ServerLimits } from './context.js';
import type { Database } from './db/database.js';
import { migrate } from './db/migrate.js';
import { migrations } from './db/migrations/index.js';
import { openStore, type ClusterOptions } from './db/open.js';
import type { StaticOptions } from './routes/static.js';
import type { PushSender } from './notifications/types.js';

export type { Bootstrap } from './bootstrap.js';
export type { ServerLimits } from './context.js';
export type { StaticOptions } from './routes/static.js';
export type { ClusterOptions } from './db/open.js';
export type { PushMessage, PushSender, PushSubscriptionRecord } from './notifications/types.js';
export { PushSendError } from './notifications/types.js';
export { createRecordingPushSender, type RecordingPushSender } from './notifications/recording-sender.js';
export { getNotificationService, type NotificationService } from './notifications/index.js';

export interface ServerOptions {
  /** Port to listen on; 0 (default) picks a free one. */
  port?: number;
  /** Interface to listen on (default 127.0.0.1). */
  host?: string;
  /** Folder of the SQLite database and uploaded files (default `.data`). */
  dataDir?: string;
  /** Keep everything in memory (tests). */
  memory?: boolean;
  /** Current time in ms (default Date.now). */
  clock?: () => number;
  limits?: Partial<ServerLimits>;
  /** Serve static folders (the demo, dist/) and a dev config endpoint. */
  static?: StaticOptions;
  /**
   * Folder of the built client runtime (client.js, runtime.json and the files it names), served at /dist/
   * whatever `static` says. Default: the package's own dist/ (next to the server module).
   */
  runtimeDir?: string;
  /** Print the bootstrap identity when it is created (default true unless memory). */
  log?: boolean;
  /** Push delivery implementation (default: Web Push, VAPID keys generated on first start). */
  pushSender?: PushSender;
  /**
   * `postgres://user:password@host:port/database`: store everything in that
   * PostgreSQL database instead of SQLite, so several instances can share it
   * (docs/postgres.md). Default: the `DATABASE_URL` environment variable when
   * it is a postgres URL and `memory` is not set.
   */
  databaseUrl?: string;
  /** Settings of an instance sharing a PostgreSQL database with others. */
  cluster?: ClusterOptions;
  /**
   * The URL browsers reach this server at, e.g. `https://api.example.com` behind a proxy (default: the
   * listening URL `http://host:port`). Pages, file links and redirects are built from it, never from the
   * request's Host header.
   */
  publicUrl?: string;
}

export interface RunningServer {
  /** Base URL, e.g. `http://127.0.0.1:8080`. */
  url: string;
  /** The URL browsers reach this server at (`publicUrl`, default `url`); pages and links are built from it. */
  publicUrl: string;
  port: number;
  bootstrap: Bootstrap;
  /**
   * The backend's notification service (the one its routes and server runs use): create, batch, update, list…
   * notifications from server code, validated like the routes (docs/notifications.md).
   */
  notifications: Omit<NotificationService, 'start' | 'stop' | 'tick'>;
  /**
   * Creates another organization with one app and its tokens (same shape as `bootstrap`). For operators
   * and tests of isolation between organizations; no HTTP route creates organizations.
   */
  createOrganization(name?: string): Promise<Bootstrap>;
  close(): Promise<void>;
  /** Runs every background job due at `clock()` now (scheduled notifications, push outbox, …); the timer loops do the same. */
  tick(): Promise<void>;
  /**
   * Stops at once as a crashed process would: database connections are cut
   * first (open transactions roll back, nothing more is written), then the
   * HTTP server and timers stop. For failover tests of several instances.
   */
  kill(): Promise<void>;
}

/**
 * Requests Node refuses before they reach the app (headers over its size limit, malformed HTTP) get the
 * usual JSON error body instead of Node's empty answer.
 */
function answerClientError(error: Error & { code?: string }, socket: import('node:stream').Duplex): void {
  if (!socket.writable || error.code === 'ECONNRESET') {
    socket.destroy();
    return;
  }
  const tooLarge = /^HPE_HEADER_OVERFLOW$/.test(error.code ?? ''); // Node's code for headers over its limit
  const body = JSON.stringify(
    tooLarge
      ? errorBody('HEADERS_TOO_LARGE', 'The request line and headers are larger than the server accepts')
      : errorBody('INVALID_REQUEST', 'The request is not valid HTTP'),
  );
  socket.end(
    `HTTP/1.1 ${tooLarge ? '431 Request Header Fields Too Large' : '400 Bad Request'}\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

/** Starts the reference backend. Rejects with code `EADDRINUSE` when the port is taken. */
export async function startServer(options: ServerOptions = {}): Promise<RunningServer> {
  const memory = options.memory ?? false;
  const envUrl = process.env.DATABASE_URL;
  const databaseUrl = options.databaseUrl ?? (!memory && envUrl && /^postgres(ql)?:\/\//i.test(envUrl) ? envUrl : undefined);
  checkServerStart({ postgres: databaseUrl !== undefined, pushSender: options.pushSender !== undefined });
  const publicUrl = options.publicUrl === undefined ? undefined : normalizePublicUrl(options.publicUrl);
  const dataDir = memory ? undefined : (options.dataDir ?? '.data');
  if (dataDir) mkdirSync(dataDir, { recursive: true });
  const store = await openStore({
    databaseUrl,
    sqlite: memory ? { memory: true } : { file: join(dataDir!, 'runtime.sqlite') },
    cluster: options.cluster,
  });
  const db: Database = store.db;
  const clock = options.clock ?? (() => Date.now());
  const closers: (() => void | Promise<void>)[] = [];
  const tickers: (() => Promise<void>)[] = [];
  let url = '';
  const ctx: ServerContext = {
    db,
    clock,
    nowIso: () => new Date(clock()).toISOString(),
    limits: { ...DEFAULT_SERVER_LIMITS, ...(options.limits ?? {}) },
    dataDir,
    instanceId: store.instanceId,
    url: () => url,
    publicUrl: () => publicUrl ?? url,
    bus: store.bus,
    onClose: (fn) => closers.push(fn),
    onTick: (fn) => {
      tickers.push(fn);
    },
    pushSender: options.pushSender,
  };

  // Registered first, so it runs last on close: after the parts that emit events.
  closers.push(() => store.stopBus());
  let server: ServerType | undefined;
  try {
    // Instances sharing a database start one after the other here (advisory lock on PostgreSQL).
    const { bootstrap, created } = await store.startup(async () => {
      await migrate(db, migrations);
      return ensureBootstrap(db, ctx.nowIso());
    });
    // SQLite: the reader threads open the file as migrated; `db.close()` stops them.
    await store.startReaders(ctx.limits.sqliteReadThreads ?? DEFAULT_SQLITE_READ_THREADS);
    if (dataDir) writeFileSync(join(dataDir, 'bootstrap.json'), JSON.stringify(bootstrap, null, 2) + '\n');
    if (created && (options.log ?? !memory)) {
      console.log('[in-app-runtime server] created organization %d, app %d', bootstrap.organizationId, bootstrap.appId);
      console.log('[in-app-runtime server] client token: %s (the one a page carries)', bootstrap.clientToken);
      console.log('[in-app-runtime server] API token:    %s', bootstrap.apiToken);
      console.log('[in-app-runtime server] studio token: %s', bootstrap.studioToken);
    }
    // Built, then started: routes and runs are given the services, and nothing runs before `start()`.
    const services = createServices(ctx);
    const app = createApp(ctx, services, { static: options.static, runtimeDir: options.runtimeDir });
    services.start();
    const host = options.host ?? '127.0.0.1';
    const port = await new Promise<number>((resolvePort, reject) => {
      server = serve({ fetch: app.fetch, port: options.port ?? 0, hostname: host }, (info) => resolvePort(info.port));
      server.once('error', reject);
      server.on('clientError', answerClientError);
    });
    // Listening on every interface: the URL names loopback, which a browser on this machine can open.
    const reachable = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host;
    url = `http://${reachable.includes(':') ? `[${reachable}]` : reachable}:${port}`;
    let closing: Promise<void> | undefined;
    return {
      url,
      publicUrl: ctx.publicUrl(),
      port,
      bootstrap,
      notifications: services.notifications,
      createOrganization: async (name = 'Organization') => {
        const trimmed = String(name).trim();
        if (trimmed === '') throw new TypeError('createOrganization: name must be a non-empty string');
        return createTenant(db, trimmed, ctx.nowIso());
      },
      async tick() {
        for (const fn of tickers) await fn();
      },
      async kill() {
        closing ??= (async () => {
          await store.kill();
          await new Promise<void>((done) => {
            server!.close(() => done());
            (server as { closeAllConnections?: () => void }).closeAllConnections?.();
          });
          for (const fn of closers.reverse())
            await Promise.resolve()
              .then(fn)
              .catch(() => undefined);
        })();
        return closing;
      },
      close() {
        closing ??= (async () => {
          for (const fn of closers.reverse()) await fn();
          await new Promise<void>((done) => {
            server!.close(() => done());
            (server as { closeAllConnections?: () => void }).closeAllConnections?.();
          });
          await db.close();
        })();
        return closing;
      },
    };
  } catch (error) {
    for (const fn of closers.reverse()) await fn();
    server?.close();
    await db.close();
    throw error;
  }
}
