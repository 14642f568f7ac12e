import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src/server/app.js';
import { createServices } from '../../src/server/services.js';
import { DEFAULT_SERVER_LIMITS, type ServerContext } from '../../src/server/context.js';
import { migrate } from '../../src/server/db/migrate.js';
import { migrations } from '../../src/server/db/migrations/index.js';
import { openStore } from '../../src/server/db/open.js';
import { openApiDocument } from '../../src/server/routes/openapi-document.js';
import { startTestBackend, type TestBackend } from '../helpers/server.js';

type Doc = {
  openapi: string;
  paths: Record<string, Record<string, { operationId: string; parameters?: { name: string; in: string }[]; responses: Record<string, unknown> }>>;
  components: { schemas: Record<string, unknown> };
  servers?: { url: string }[];
};

const METHODS = new Set(['GET', 'POST', 'PUT', 'DELETE', 'PATCH']);

/** Every `METHOD /path` the Hono app of the backend registers (middleware and the static catch-all left out). */
async function registeredRoutes(): Promise<{ routes: Set<string>; close: () => Promise<void> }> {
  const store = await openStore({ sqlite: { memory: true } });
  await migrate(store.db, migrations);
  const closers: (() => void | Promise<void>)[] = [];
  const ctx: ServerContext = {
    db: store.db,
    clock: () => Date.now(),
    nowIso: () => new Date().toISOString(),
    limits: DEFAULT_SERVER_LIMITS,
    dataDir: undefined,
    instanceId: store.instanceId,
    url: () => 'http://127.0.0.1:0',
    publicUrl: () => 'http://127.0.0.1:0',
    bus: store.bus,
    onClose: (fn) => closers.push(fn),
    onTick: () => undefined,
  };
  // Without static mounts: /dev/config and the file server are for the demo, not part of the REST interface.
  const app = createApp(ctx, createServices(ctx));
  const routes = new Set(app.routes.filter((r) => METHODS.has(r.method) && !r.path.includes('*')).map((r) => `${r.method} ${r.path}`));
  return {
    routes,
    close: async () => {
      for (const fn of closers.reverse()) await fn();
      await store.stopBus();
      await store.db.close();
    },
  };
}

function documented(doc: Doc): Set<string> {
  const out = new Set<string>();
  for (const [path, ops] of Object.entries(doc.paths))
    for (const method of Object.keys(ops)) out.add(`${method.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ':$1')}`);
  return out;
}

describe('OpenAPI document', () => {
  let b: TestBackend;
  beforeAll(async () => {
    b = await startTestBackend();
  });
  afterAll(async () => {
    await b?.close();
  });

  it('documents every registered route, and only those', async () => {
    const { routes, close } = await registeredRoutes();
    try {
      const doc = openApiDocument() as Doc;
      const listed = documented(doc);
      expect(routes.size).toBeGreaterThan(50);
      expect(
        [...routes].filter((r) => !listed.has(r)),
        'routes missing from the document',
      ).toEqual([]);
      expect(
        [...listed].filter((r) => !routes.has(r)),
        'documented routes that do not exist',
      ).toEqual([]);
    } finally {
      await close();
    }
  });

  it('is served at GET /openapi.json without a token, with the server address', async () => {
    const res = await b.api('GET', '/openapi.json', { token: null });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('application/json');
    const doc = res.body as Doc;
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.servers).toEqual([{ url: b.url }]);
    expect({ ...doc, servers: undefined }).toEqual({ ...(openApiDocument() as Doc), servers: undefined });
  });

  it('is well formed: path parameters declared, unique operation ids, every $ref resolves, an error response everywhere', () => {
    const doc = openApiDocument() as Doc;
    const ids = new Set<string>();
    for (const [path, ops] of Object.entries(doc.paths)) {
      const params = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
      for (const [method, op] of Object.entries(ops)) {
        const declared = (op.parameters ?? []).filter((p) => p.in === 'path').map((p) => p.name);
        expect(declared, `${method} ${path}`).toEqual(params);
        expect(ids.has(op.operationId), `duplicate operationId ${op.operationId}`).toBe(false);
        ids.add(op.operationId);
        expect(Object.keys(op.responses)).toContain('default');
        expect(
          Object.keys(op.responses).some((s) => /^2\d\d$/.test(s)),
          `${method} ${path} has a success response`,
        ).toBe(true);
      }
    }
    const refs = [...JSON.stringify(doc).matchAll(/"\$ref":"#\/components\/schemas\/(\w+)"/g)].map((m) => m[1]!);
    expect(refs.length).toBeGreaterThan(20);
    for (const name of refs) expect(doc.components.schemas, `schema ${name}`).toHaveProperty(name);
  });

  it('answers like the document says for a few routes (status codes and top-level keys)', async () => {
    const doc = openApiDocument() as Doc;
    const keysOf = (path: string, method: string, status: number) => {
      const response = doc.paths[path]![method]!.responses[String(status)] as {
        content: { 'application/json': { schema: { properties: Record<string, unknown> } } };
      };
      return Object.keys(response.content['application/json'].schema.properties);
    };
    const appId = b.server.bootstrap.appId;
    const created = await b.api('POST', `/v1/data-sources?appId=${appId}`, { json: { name: 'openapi-check' } });
    expect(created.status).toBe(201);
    expect(keysOf('/v1/data-sources', 'post', 201)).toEqual(Object.keys(created.body));
    const tasks = await b.api('POST', `/v1/apps/${appId}/tasks`, { json: { name: 'openapi-action' } });
    expect(tasks.status).toBe(201);
    expect(keysOf('/v1/apps/{appId}/tasks', 'post', 201)).toEqual(Object.keys(tasks.body));
    const notification = await b.api('PUT', `/v1/apps/${appId}/notifications`, { json: { data: { t: 1 } } });
    expect(notification.status).toBe(201);
    expect(keysOf('/v1/apps/{appId}/notifications', 'put', 201)).toEqual(Object.keys(notification.body));
    const error = await b.api('GET', `/v1/apps/${appId}/tasks/999999`);
    expect(error.status).toBe(404);
    expect(Object.keys(error.body.error)).toEqual(expect.arrayContaining(['code', 'message']));
    const errorSchema = (doc as unknown as { components: { schemas: { Error: { properties: Record<string, unknown> } } } }).components.schemas.Error;
    expect(Object.keys(errorSchema.properties).sort()).toEqual(Object.keys(error.body).sort());
    expect(error.body.message).toBe(error.body.error.message);
  });
});
