/**
 * Node module hooks for threads started from src/ (src/server/actions/threads/dev-thread.mjs,
 * src/pipeline/engine-thread.mjs): `./x.js` imported from a .ts file
 * resolves to `./x.ts` when only that exists, and .ts files are transpiled with TypeScript's transpileModule
 * (isolatedModules: each file alone), cached by content in node_modules/.cache/in-app-runtime-threads, so a
 * thread starts without loading TypeScript once every file was seen. Dev and test only (not in the package):
 * the built package starts dist/server/run-thread.mjs, dist/server/sqlite-reader-thread.mjs and dist/engine-thread.mjs.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync } from 'node:fs';
import { readFile, rename, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

const CACHE = fileURLToPath(new URL('../node_modules/.cache/in-app-runtime-threads/', import.meta.url));
const OPTIONS = { module: 'ESNext', target: 'ES2022', inlineSourceMap: true, isolatedModules: true };
let ts;

export async function resolve(specifier, context, next) {
  if (context.parentURL?.endsWith('.ts') && /^\.\.?\//.test(specifier) && specifier.endsWith('.js')) {
    const url = new URL(specifier.slice(0, -3) + '.ts', context.parentURL);
    if (!existsSync(fileURLToPath(new URL(specifier, context.parentURL))) && existsSync(fileURLToPath(url)))
      return { url: url.href, format: 'module', shortCircuit: true };
  }
  return next(specifier, context);
}

export async function load(url, context, next) {
  if (!url.startsWith('file:') || !url.endsWith('.ts')) return next(url, context);
  const file = fileURLToPath(url);
  const source = await readFile(file, 'utf8');
  const key = createHash('sha256').update(file).update('\0').update(JSON.stringify(OPTIONS)).update('\0').update(source).digest('hex');
  const cached = CACHE + key + '.js';
  const hit = await readFile(cached, 'utf8').catch(() => undefined);
  if (hit !== undefined) return { format: 'module', source: hit, shortCircuit: true };
  ts ??= (await import('typescript')).default;
  const { outputText } = ts.transpileModule(source, {
    fileName: file,
    compilerOptions: { ...OPTIONS, module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
  });
  mkdirSync(CACHE, { recursive: true });
  const temp = `${cached}.${process.pid}.${Math.random().toString(36).slice(2)}`;
  await writeFile(temp, outputText)
    .then(() => rename(temp, cached))
    .catch(() => undefined);
  return { format: 'module', source: outputText, shortCircuit: true };
}
