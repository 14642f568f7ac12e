import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { App, AppEnv, ServerContext } from './context.js';
import type { ServerServices } from './services.js';
import { authMiddleware, tokenKindGate } from './http/auth.js';
import { errorBody, sendError } from './http/errors.js';
import { registerActionRoutes } from './routes/actions.js';
import { registerAnalyticsRoutes } from './routes/analytics.js';
import { registerAppRoutes } from './routes/apps.js';
import { registerFunctionRoutes } from './routes/functions.js';
import { registerIdentityRoutes } from './routes/identity.js';
import { registerMediaRoutes } from './routes/media.js';
import { registerDataSourceRoutes } from './routes/data-sources.js';
import { registerNotificationRoutes } from './routes/notifications.js';
import { registerOpenApiRoutes } from './routes/openapi.js';
import { registerRuntimeRoutes } from './routes/runtime.js';
import { registerStaticRoutes, type StaticOptions } from './routes/static.js';

export interface AppOptions {
  static?: StaticOptions;
  /** Folder of the built client runtime served at /dist/ (default: found next to the server module). */
  runtimeDir?: string;
}

/**
 * Composes the Hono application: error convention, CORS, auth, every route module, over the services startServer
 * built (services.ts). Registering routes starts nothing.
 */
export function createApp(ctx: ServerContext, services: ServerServices, options: AppOptions = {}): App {
  const app = new Hono<AppEnv>();
  app.onError((error, c) => sendError(c, error));
  app.notFound((c) => {
    const path = new URL(c.req.url).pathname;
    // Browsers ask every page's origin for /favicon.ico (the debug page, the demo): no icon, no 404 in their console.
    // A static mount that has one serves it first.
    if (path === '/favicon.ico' && (c.req.method === 'GET' || c.req.method === 'HEAD')) return c.body(null, 204);
    return c.json(errorBody('NOT_FOUND', `No route for ${c.req.method} ${path}`), 404);
  });

  app.use('/v1/*', async (c, next) => {
    c.set('limits', ctx.limits);
    // App screens call the backend from other origins; tokens travel in a header, never in cookies.
    c.header('Access-Control-Allow-Origin', '*');
    c.header('Access-Control-Allow-Headers', 'Auth-token, Content-Type, Idempotency-Key, If-None-Match');
    c.header('Access-Control-Expose-Headers', 'ETag, Idempotent-Replayed');
    c.header('Access-Control-Allow-Methods', 'GET, POST, PUT, DELETE, OPTIONS');
    if (c.req.method === 'OPTIONS') {
      // Every API call from a screen is preflighted (Auth-token is not a simple header): browsers may keep
      // the answer for a day (Chromium caps it at 2 hours), instead of asking again for each request.
      c.header('Access-Control-Max-Age', '86400');
      return c.body(null, 204);
    }
    await next();
  });
  app.use(
    '/v1/*',
    bodyLimit({
      maxSize: ctx.limits.bodyBytes,
      onError: (c) => c.json(errorBody('PAYLOAD_TOO_LARGE', `The request body is larger than ${ctx.limits.bodyBytes} bytes`), 413),
    }),
  );
  app.use('/v1/*', authMiddleware(ctx));
  // Each route's token kinds (http/token-kinds.ts): a client token reaches only the routes listed for it.
  app.use('/v1/*', tokenKindGate());

  registerAppRoutes(app, ctx);
  registerIdentityRoutes(app, ctx);
  registerDataSourceRoutes(app, ctx, services.dataSources);
  registerMediaRoutes(app, ctx, services.media);
  registerNotificationRoutes(app, ctx, services.notifications);
  registerActionRoutes(app, ctx, services.actions);
  registerFunctionRoutes(app, ctx);
  registerAnalyticsRoutes(app, ctx);
  registerOpenApiRoutes(app, ctx);
  // The page runtime (client.js, engine, wasm) at /dist/, always: before the static mounts, so they cannot shadow it.
  registerRuntimeRoutes(app, { dir: options.runtimeDir });
  if (options.static) registerStaticRoutes(app, options.static);
  return app;
}
