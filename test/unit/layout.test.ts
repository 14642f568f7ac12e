import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve, dirname } from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = resolve(__dirname, '../../src');

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : path.endsWith('.ts') ? [path] : [];
  });
}

const IMPORT = /(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|(?<!typeof )import\(\s*['"]([^'"]+)['"]\s*\)/g;

/**
 * Node-only entry points of the npm build outside `server/`: rollup.config.mjs builds each on its own (never into
 * client.js) and no other source file imports them (checked below).
 */
const NODE_ONLY = new Set(['pipeline/node-thread.ts']);

describe('source layout (design §4)', () => {
  it('browser code never imports server code or Node built-ins', () => {
    const offenders: string[] = [];
    for (const file of files(SRC)) {
      const rel = relative(SRC, file);
      if (rel.startsWith('server/')) continue;
      if (NODE_ONLY.has(rel)) continue;
      const text = readFileSync(file, 'utf8');
      for (const match of text.matchAll(IMPORT)) {
        const spec = match[1] ?? match[2]!;
        if (spec.startsWith('.')) {
          const target = relative(SRC, resolve(dirname(file), spec));
          if (target.startsWith('server/') || target === 'server' || NODE_ONLY.has(target.replace(/\.js$/, '.ts'))) offenders.push(`${rel} → ${spec}`);
        } else if (spec.startsWith('node:') || ['better-sqlite3', 'pg', 'hono', '@hono/node-server', 'web-push'].includes(spec)) {
          offenders.push(`${rel} → ${spec}`);
        }
      }
    }
    expect(offenders).toEqual([]);
  });

  it('the server imports the client only through the contract (src/contract) and the shared engine', () => {
    // What both sides run: the pipeline engine, its built-ins and sandbox, the filter engine.
    const shared = ['contract/', 'pipeline/', 'functions/', 'sandbox/', 'filter/'];
    const offenders: string[] = [];
    for (const file of files(join(SRC, 'server'))) {
      const text = readFileSync(file, 'utf8');
      for (const match of text.matchAll(IMPORT)) {
        const spec = match[1] ?? match[2]!;
        if (!spec.startsWith('.')) continue;
        const target = relative(SRC, resolve(dirname(file), spec));
        if (!target.startsWith('server/') && !shared.some((p) => target.startsWith(p))) offenders.push(`${relative(SRC, file)} → ${spec}`);
      }
    }
    expect(offenders).toEqual([]);
  });

  it('the contract imports nothing but the contract and the shared engine', () => {
    const offenders: string[] = [];
    for (const file of files(join(SRC, 'contract'))) {
      const text = readFileSync(file, 'utf8');
      for (const match of text.matchAll(IMPORT)) {
        const spec = match[1] ?? match[2]!;
        const target = spec.startsWith('.') ? relative(SRC, resolve(dirname(file), spec)) : spec;
        if (!['contract/', 'filter/', 'pipeline/'].some((p) => target.startsWith(p))) offenders.push(`${relative(SRC, file)} → ${spec}`);
      }
    }
    expect(offenders).toEqual([]);
  });

  it('the state of a client lives in its runtime (core/runtime.ts), not in module-level maps keyed by its context', () => {
    const offenders = files(SRC)
      .filter((file) => !relative(SRC, file).startsWith('server/'))
      .filter((file) => /WeakMap<\s*(?:ClientContext|RunsHost)/.test(readFileSync(file, 'utf8')))
      .map((file) => relative(SRC, file));
    expect(offenders).toEqual([]);
  });

  it('functions/ (the built-ins) never imports pipeline/ (the engine that runs them): one direction only', () => {
    const offenders = files(join(SRC, 'functions')).flatMap((file) =>
      [...readFileSync(file, 'utf8').matchAll(IMPORT)]
        .map((m) => m[1] ?? m[2]!)
        .filter((spec) => spec.startsWith('.') && relative(SRC, resolve(dirname(file), spec)).startsWith('pipeline/'))
        .map((spec) => `${relative(SRC, file)} → ${spec}`),
    );
    expect(offenders).toEqual([]);
  });
});
