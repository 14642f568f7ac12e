/**
 * The runtime app screens load (design §2): `GET /dist/client.js` and the lazy files that
 * `dist/runtime.json` names (the engine chunk and the QuickJS wasm, content-hashed), served by every
 * backend whatever `static` says, the way a CDN would:
 *
 * - from any origin: `Access-Control-Allow-Origin: *` and `Cross-Origin-Resource-Policy: cross-origin`;
 * - precompressed: the build's `.br` and `.gz` copies, chosen by `Accept-Encoding` (`Vary: Accept-Encoding`);
 * - hashed files are `immutable` for a year; client.js keeps its stable name, so it gets a short cache
 *   (`CLIENT_MAX_AGE_S`) and an ETag, and a revalidation answers 304.
 *
 * Any other path under /dist/ goes on to the next handler (the `static` mounts, then 404).
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { App } from '../context.js';
import { errorBody } from '../http/errors.js';

export const RUNTIME_PREFIX = '/dist/';
/** Seconds a browser may reuse client.js before it revalidates (a new backend version is picked up this fast). */
export const CLIENT_MAX_AGE_S = 60;
const IMMUTABLE = 'public, max-age=31536000, immutable';

const TYPES: Record<string, string> = {
  js: 'text/javascript; charset=utf-8',
  mjs: 'text/javascript; charset=utf-8',
  wasm: 'application/wasm',
  map: 'application/json',
};

type Encoding = 'br' | 'gzip' | 'identity';

interface Variant {
  body: Uint8Array;
  etag: string;
}

interface RuntimeFile {
  /** File modification time the variants were read at. */
  mtimeMs: number;
  type: string;
  cacheControl: string;
  variants: Partial<Record<Encoding, Variant>>;
}

/**
 * The folder holding client.js and runtime.json: next to the server module once built (dist/server.mjs), or
 * the package's dist/ when running from source.
 */
export function findRuntimeDir(from = dirname(fileURLToPath(import.meta.url))): string | undefined {
  let dir = from;
  for (let depth = 0; depth < 5; depth++) {
    for (const candidate of [dir, join(dir, 'dist')])
      if (existsSync(join(candidate, 'runtime.json')) && existsSync(join(candidate, 'client.js'))) return candidate;
    const parent = dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  return undefined;
}

/** The available encoding the request prefers: the highest q (RFC 9110 §12.5.3), brotli before gzip on a tie. */
export function chooseEncoding(header: string | undefined, available: readonly Encoding[]): Encoding {
  const accepted = new Map<string, number>();
  for (const part of (header ?? '').split(',')) {
    const [name, ...params] = part.trim().toLowerCase().split(';');
    if (!name) continue;
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    accepted.set(name, q ? Number(q.slice(2)) || 0 : 1);
  }
  const weight = (name: Encoding) => accepted.get(name) ?? accepted.get('*') ?? 0;
  return (['br', 'gzip'] as const)
    .filter((encoding) => available.includes(encoding) && weight(encoding) > 0)
    .reduce<Encoding>((best, encoding) => (best === 'identity' || weight(encoding) > weight(best) ? encoding : best), 'identity');
}

/** Whether an If-None-Match header names this representation (weak comparison, RFC 9110 §13.1.2). */
function matches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  if (ifNoneMatch.trim() === '*') return true;
  return ifNoneMatch.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag);
}

async function readOptional(path: string): Promise<Uint8Array | undefined> {
  try {
    return await readFile(path);
  } catch {
    return undefined;
  }
}

export interface RuntimeRouteOptions {
  /** Folder of the built runtime (default: found next to the server module, see findRuntimeDir). */
  dir?: string;
}

export function registerRuntimeRoutes(app: App, options: RuntimeRouteOptions = {}): void {
  const dir = options.dir ?? findRuntimeDir();
  const cache = new Map<string, RuntimeFile>();
  let manifest: { mtimeMs: number; names: Set<string> } | undefined;

  /** client.js and each file of runtime.json, with their source maps (re-read when the build changes). */
  async function servedNames(root: string): Promise<Set<string>> {
    const info = await stat(join(root, 'runtime.json'));
    if (manifest?.mtimeMs !== info.mtimeMs) {
      const files = Object.values(JSON.parse(await readFile(join(root, 'runtime.json'), 'utf8')) as Record<string, string>);
      const names = new Set<string>();
      for (const name of ['client.js', ...files]) names.add(name).add(`${name}.map`);
      manifest = { mtimeMs: info.mtimeMs, names };
    }
    return manifest.names;
  }

  async function load(root: string, name: string): Promise<RuntimeFile | undefined> {
    let info: Awaited<ReturnType<typeof stat>>;
    try {
      info = await stat(join(root, name));
    } catch {
      return undefined;
    }
    const cached = cache.get(name);
    if (cached?.mtimeMs === info.mtimeMs) return cached;
    const body = await readFile(join(root, name));
    const hash = createHash('sha256').update(body).digest('base64url').slice(0, 22);
    const variants: RuntimeFile['variants'] = { identity: { body, etag: `"${hash}"` } };
    const br = await readOptional(join(root, `${name}.br`));
    if (br) variants.br = { body: br, etag: `"${hash}-br"` };
    const gz = await readOptional(join(root, `${name}.gz`));
    if (gz) variants.gzip = { body: gz, etag: `"${hash}-gz"` };
    const hashed = /-[A-Za-z0-9_-]{6,}\.(mjs|wasm)(\.map)?$/.test(name);
    const file: RuntimeFile = {
      mtimeMs: info.mtimeMs,
      type: TYPES[name.slice(name.lastIndexOf('.') + 1)] ?? 'application/octet-stream',
      cacheControl: hashed ? IMMUTABLE : `public, max-age=${CLIENT_MAX_AGE_S}`,
      variants,
    };
    cache.set(name, file);
    return file;
  }

  app.get(`${RUNTIME_PREFIX}*`, async (c, next) => {
    const name = new URL(c.req.url).pathname.slice(RUNTIME_PREFIX.length);
    if (!dir) {
      if (name === 'client.js') return c.json(errorBody('RUNTIME_NOT_BUILT', 'The client runtime is not built: run `npm run build`'), 404);
      return next();
    }
    if (!(await servedNames(dir).catch(() => new Set<string>())).has(name)) return next();
    // A file that vanished under a rebuild (between stat and read) is simply not there.
    const file = await load(dir, name).catch(() => undefined);
    if (!file) return next();
    const encoding = chooseEncoding(c.req.header('Accept-Encoding'), Object.keys(file.variants) as Encoding[]);
    const variant = file.variants[encoding]!;
    const headers: Record<string, string> = {
      'Content-Type': file.type,
      'Cache-Control': file.cacheControl,
      ETag: variant.etag,
      'Access-Control-Allow-Origin': '*',
      'Cross-Origin-Resource-Policy': 'cross-origin',
      'X-Content-Type-Options': 'nosniff',
    };
    if (Object.keys(file.variants).length > 1) headers.Vary = 'Accept-Encoding';
    if (matches(c.req.header('If-None-Match'), variant.etag)) {
      delete headers['Content-Type'];
      return c.body(null, 304, headers);
    }
    if (encoding !== 'identity') headers['Content-Encoding'] = encoding;
    return c.body(variant.body as Uint8Array<ArrayBuffer>, 200, headers);
  });
}
