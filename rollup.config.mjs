import commonjs from '@rollup/plugin-commonjs';
import { nodeResolve } from '@rollup/plugin-node-resolve';
import terser from '@rollup/plugin-terser';
import typescript from '@rollup/plugin-typescript';
import { builtinModules } from 'node:module';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { dts } from 'rollup-plugin-dts';

const pkg = JSON.parse(readFileSync(new URL('./package.json', import.meta.url), 'utf8'));
const dependencies = Object.keys(pkg.dependencies ?? {});
const nodeBuiltins = [...builtinModules, ...builtinModules.map((m) => `node:${m}`)];
/** npm and server builds leave dependencies to the user's package manager. */
const external = (id) =>
  nodeBuiltins.includes(id) || dependencies.some((dep) => id === dep || id.startsWith(`${dep}/`));

const ts = () =>
  typescript({ tsconfig: './tsconfig.json', include: ['src/**/*.ts'], noEmit: false, declaration: false, sourceMap: true });

/** client.js: the engine is not bundled; src/pipeline/engine-import.ts becomes its browser twin (a runtime-computed import()). */
const browserEngineImport = () => ({
  name: 'browser-engine-import',
  async resolveId(source, importer, options) {
    if (!source.endsWith('/engine-import.js') || !importer?.includes('/src/pipeline/')) return null;
    return fileURLToPath(new URL('./src/pipeline/engine-import.browser.ts', import.meta.url));
  },
});

/** dist/quickjs.wasm: the QuickJS release-sync module, fetched by the engine on the first run. */
const quickjsWasm = () => ({
  name: 'quickjs-wasm',
  generateBundle() {
    const path = createRequire(import.meta.url).resolve('@jitl/quickjs-wasmfile-release-sync/wasm');
    this.emitFile({ type: 'asset', fileName: 'quickjs.wasm', source: readFileSync(path) });
  },
});

export default [
  // dist/engine.mjs: the pipeline engine (QuickJS glue, sandbox, runner), loaded lazily by client.js
  // with import() or started as a module Web Worker; plus dist/quickjs.wasm next to it.
  {
    input: 'src/pipeline/engine-entry.ts',
    output: { file: 'dist/engine.mjs', format: 'es', sourcemap: true, inlineDynamicImports: true },
    plugins: [nodeResolve({ browser: true, exportConditions: ['browser'] }), commonjs(), ts(), terser(), quickjsWasm()],
  },
  // <script src="client.js">: one IIFE defining window.Client; dependencies bundled.
  {
    input: 'src/global.ts',
    output: { file: 'dist/client.js', format: 'iife', sourcemap: true, inlineDynamicImports: true },
    plugins: [browserEngineImport(), nodeResolve({ browser: true, exportConditions: ['browser'] }), commonjs(), ts(), terser()],
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
  // Node-only reference backend.
  {
    input: 'src/server/index.ts',
    output: { file: 'dist/server.mjs', format: 'es', sourcemap: true },
    external,
    plugins: [ts()],
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
