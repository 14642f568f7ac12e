import commonjs from '@rollup/plugin-commonjs';
import { nodeResolve } from '@rollup/plugin-node-resolve';
import terser from '@rollup/plugin-terser';
import typescript from '@rollup/plugin-typescript';
import { builtinModules } from 'node:module';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import zlib from 'node:zlib';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { dts } from 'rollup-plugin-dts';

const pkg = JSON.parse(readFileSync(new URL('./package.json', import.meta.url), 'utf8'));
// The server's packages are optional peers (dist/server.mjs checks them before loading the server).
const dependencies = [...Object.keys(pkg.dependencies ?? {}), ...Object.keys(pkg.peerDependencies ?? {})];
const nodeBuiltins = [...builtinModules, ...builtinModules.map((m) => `node:${m}`)];
/** npm and server builds leave dependencies and peer dependencies to the user's package manager. */
const external = (id) => nodeBuiltins.includes(id) || dependencies.some((dep) => id === dep || id.startsWith(`${dep}/`));

const ts = () => typescript({ tsconfig: './tsconfig.json', include: ['src/**/*.ts'], noEmit: false, declaration: false, sourceMap: true });

/**
 * client.js: the lazy chunks are not bundled; src/core/lazy-import.ts becomes its browser twin (a runtime-computed
 * import()), and src/pipeline/node-worker.ts (the Node engine thread) a stub.
 */
const BROWSER_TWINS = { '/lazy-import.js': './src/core/lazy-import.browser.ts', '/node-worker.js': './src/pipeline/node-worker.browser.ts' };
const browserLazyImport = () => ({
  name: 'browser-lazy-import',
  async resolveId(source, importer) {
    const twin = Object.entries(BROWSER_TWINS).find(([suffix]) => source.endsWith(suffix));
    if (!twin || !importer?.includes('/src/') || importer.endsWith('.browser.ts')) return null;
    return fileURLToPath(new URL(twin[1], import.meta.url));
  },
});

/** A lazy chunk of client.js, dist/<name>-<hash>.mjs, named in dist/runtime.json under `name` (src/core/lazy.ts). */
const lazyChunk = (name, input) => ({
  input,
  output: { dir: 'dist', entryFileNames: `${name}-[hash].mjs`, format: 'es', sourcemap: true, inlineDynamicImports: true },
  plugins: [nodeResolve({ browser: true, exportConditions: ['browser'] }), commonjs(), ts(), terser(), runtimeFile(name, isEntry)],
});

/** dist/quickjs-<hash>.wasm: the QuickJS release-sync module, fetched by the engine on the first run. */
const quickjsWasm = () => ({
  name: 'quickjs-wasm',
  generateBundle() {
    const path = createRequire(import.meta.url).resolve('@jitl/quickjs-wasmfile-release-sync/wasm');
    this.emitFile({ type: 'asset', name: 'quickjs.wasm', source: readFileSync(path) });
  },
});

/**
 * dist/runtime.json names the content-hashed runtime files next to client.js: `{ engine, wasm, … }`. Each lazy
 * chunk's build records its file with `runtimeFile(key, …)`; client.js is built last and reads it (the names
 * become constants of src/pipeline/asset-names.ts), and the backend serves exactly the files it names.
 * The first build (`reset`) removes the hashed files of earlier builds.
 */
const MANIFEST = fileURLToPath(new URL('./dist/runtime.json', import.meta.url));
const readManifest = () => (existsSync(MANIFEST) ? JSON.parse(readFileSync(MANIFEST, 'utf8')) : {});
const runtimeFile = (key, pick, { reset = false } = {}) => ({
  name: `runtime-file-${key}`,
  buildStart() {
    if (!reset) return;
    const dist = dirname(MANIFEST);
    for (const name of existsSync(dist) ? readdirSync(dist) : [])
      if (/^[a-z]+-[A-Za-z0-9_-]{6,}\.(mjs|wasm)(\.map|\.br|\.gz)?$/.test(name) || /^(runtime\.json|engine\.mjs(\.map)?|quickjs\.wasm)$/.test(name))
        rmSync(join(dist, name));
  },
  writeBundle(_options, bundle) {
    const file = Object.values(bundle).find(pick)?.fileName;
    if (!file) this.error(`no output file for the runtime manifest key "${key}"`);
    writeFileSync(MANIFEST, JSON.stringify({ ...readManifest(), [key]: file }, null, 2) + '\n');
  },
});
const isEntry = (f) => f.type === 'chunk' && f.isEntry;

/**
 * client.js: the hashed names of the lazy files (from dist/runtime.json) replace src/pipeline/asset-names.ts,
 * one `<KEY>_FILE` constant per key (ENGINE_FILE, WASM_FILE, QUERY_FILE, VALIDATE_FILE, PIPELINE_FILE, PUSH_FILE, CATALOG_FILE, RUNS_FILE, NOTIFY_FILE).
 */
const RUNTIME_KEYS = ['engine', 'wasm', 'query', 'validate', 'pipeline', 'push', 'catalog', 'runs', 'notify'];
const runtimeAssetNames = () => ({
  name: 'runtime-asset-names',
  resolveId(source, importer) {
    return source.endsWith('/asset-names.js') && importer?.includes('/src/') ? '\0runtime-asset-names' : null;
  },
  load(id) {
    if (id !== '\0runtime-asset-names') return null;
    const manifest = readManifest();
    const missing = RUNTIME_KEYS.filter((key) => !manifest[key]);
    if (missing.length) this.error(`dist/runtime.json lacks ${missing.join(', ')}: the lazy chunk builds must run before client.js`);
    return RUNTIME_KEYS.map((key) => `export const ${key.toUpperCase()}_FILE = ${JSON.stringify(manifest[key])};\n`).join('');
  },
});

/**
 * Brotli (quality 11) and gzip (level 9) copies of client.js and every file of dist/runtime.json, written next
 * to them (`.br`, `.gz`); the backend negotiates them with Accept-Encoding (src/server/routes/runtime.ts).
 */
const precompress = () => ({
  name: 'precompress-runtime',
  writeBundle() {
    const dist = dirname(MANIFEST);
    for (const name of ['client.js', ...Object.values(readManifest())]) {
      const source = readFileSync(join(dist, name));
      const quality = { [zlib.constants.BROTLI_PARAM_QUALITY]: 11, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: source.length };
      writeFileSync(join(dist, `${name}.br`), zlib.brotliCompressSync(source, { params: quality }));
      writeFileSync(join(dist, `${name}.gz`), zlib.gzipSync(source, { level: 9 }));
    }
  },
});

/**
 * The server's threads, each an entry of its own: the run threads (src/server/actions/threads/thread.ts becomes
 * dist/server/run-thread.mjs) and the SQLite reader threads (src/server/db/sqlite-readers/thread.ts becomes
 * dist/server/sqlite-reader-thread.mjs). The folder's entry-url.ts (which names the dev bootstrap in src/) becomes
 * that file's URL, resolved from the chunk that imports it (`import.meta.ROLLUP_FILE_URL_…`).
 */
const threadEntry = (folder, fileName, exportName) => ({
  name: `thread-entry-${fileName}`,
  resolveId(source, importer) {
    return source.endsWith('/entry-url.js') && importer?.includes(`/src/server/${folder}/`) ? `\0thread-entry-${fileName}` : null;
  },
  load(id) {
    if (id !== `\0thread-entry-${fileName}`) return null;
    const ref = this.emitFile({
      type: 'chunk',
      id: fileURLToPath(new URL(`./src/server/${folder}/thread.ts`, import.meta.url)),
      fileName: `server/${fileName}`,
    });
    return `export const ${exportName} = new URL(import.meta.ROLLUP_FILE_URL_${ref});\n`;
  },
});

export default [
  // dist/engine-<hash>.mjs: the pipeline engine (QuickJS glue, sandbox, runner), loaded lazily by client.js
  // with import() or started as a module Web Worker; plus dist/quickjs-<hash>.wasm next to it.
  {
    input: 'src/pipeline/engine-entry.ts',
    output: {
      dir: 'dist',
      entryFileNames: 'engine-[hash].mjs',
      assetFileNames: '[name]-[hash][extname]',
      format: 'es',
      sourcemap: true,
      inlineDynamicImports: true,
    },
    plugins: [
      nodeResolve({ browser: true, exportConditions: ['browser'] }),
      commonjs(),
      ts(),
      terser(),
      quickjsWasm(),
      runtimeFile('engine', isEntry, { reset: true }),
      runtimeFile('wasm', (f) => f.type === 'asset' && f.fileName.endsWith('.wasm')),
    ],
  },
  // Lazy chunks of client.js for what few screens need (src/core/lazy.ts): sift matching of analytics
  // trigger `where` and getLogs `where` (query), action validation for create/update (validate), the debug
  // page's Pipeline.run (pipeline), the Push API side of Notifications.subscribe (push), the built-ins'
  // descriptions of Tasks.Functions.get (catalog), run handles, run logs and the offline status (runs), notification writes (notify).
  lazyChunk('query', 'src/core/query-entry.ts'),
  lazyChunk('validate', 'src/contract/action-validate.ts'),
  lazyChunk('pipeline', 'src/actions/pipeline-run.ts'),
  lazyChunk('push', 'src/notifications/push-subscribe.ts'),
  lazyChunk('catalog', 'src/functions/catalog.ts'),
  lazyChunk('runs', 'src/core/runs-entry.ts'),
  lazyChunk('notify', 'src/notifications/writes.ts'),
  // <script src="client.js">: one IIFE defining window.Client; dependencies bundled.
  {
    input: 'src/global.ts',
    output: { file: 'dist/client.js', format: 'iife', sourcemap: true, inlineDynamicImports: true },
    plugins: [
      browserLazyImport(),
      runtimeAssetNames(),
      nodeResolve({ browser: true, exportConditions: ['browser'] }),
      commonjs(),
      ts(),
      terser({ compress: { passes: 2 } }),
      precompress(),
    ],
  },
  // npm entry (ESM + CJS).
  {
    input: 'src/index.ts',
    output: [
      { file: 'dist/index.mjs', format: 'es', sourcemap: true, inlineDynamicImports: true },
      { file: 'dist/index.cjs', format: 'cjs', sourcemap: true, inlineDynamicImports: true },
    ],
    external,
    plugins: [ts()],
  },
  // dist/engine-thread.mjs: the pipeline engine in a Node worker thread, started by the npm client in Node
  // (src/pipeline/node-worker.ts names it next to dist/index.mjs / index.cjs).
  {
    input: 'src/pipeline/node-thread.ts',
    output: { file: 'dist/engine-thread.mjs', format: 'es', sourcemap: true, inlineDynamicImports: true },
    external,
    plugins: [ts()],
  },
  // Node-only reference backend: dist/server.mjs checks that the server's packages (optional peers) are
  // installed, then imports the server from dist/server/ (the store drivers are chunks of their own, loaded
  // by the store in use; the run threads start dist/server/run-thread.mjs, the SQLite reader threads
  // dist/server/sqlite-reader-thread.mjs).
  {
    input: { server: 'src/server/entry.ts' },
    output: { dir: 'dist', entryFileNames: '[name].mjs', chunkFileNames: 'server/[name].mjs', format: 'es', sourcemap: true },
    external,
    plugins: [
      { name: 'clean-server-chunks', buildStart: () => rmSync(fileURLToPath(new URL('./dist/server', import.meta.url)), { recursive: true, force: true }) },
      threadEntry('actions/threads', 'run-thread.mjs', 'THREAD_ENTRY'),
      threadEntry('db/sqlite-readers', 'sqlite-reader-thread.mjs', 'READER_ENTRY'),
      ts(),
    ],
  },
  // Bundled type declarations.
  {
    input: 'src/index.ts',
    output: [{ file: 'dist/index.d.ts' }, { file: 'dist/index.d.cts' }],
    plugins: [dts({ tsconfig: './tsconfig.json' })],
  },
  {
    input: 'src/server/index.ts',
    output: { file: 'dist/server.d.ts' },
    external,
    plugins: [dts({ tsconfig: './tsconfig.json' })],
  },
];
