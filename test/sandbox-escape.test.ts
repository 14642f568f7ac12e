/**
 * Escape attempts against the pipeline sandbox. Each test names the attempt and its expected outcome.
 * User code runs only inside QuickJS (WebAssembly); the host sees JSON copies of guest values.
 */
import { describe, expect, test } from 'vitest';
import { runPipeline } from '../src/pipeline/index.js';
import type { HostServices, RunOutcome } from '../src/contract/pipeline.js';

const calls: unknown[][] = [];
const services: HostServices = {
  dataSources: {
    connect: (idOrName) => ({
      find: async () => {
        calls.push(['find', idOrName]);
        if (idOrName === 'slow') await new Promise((r) => setTimeout(r, 30));
        if (idOrName === 'broken') throw new Error(`Cannot read ${process.cwd()}/secret.ts at Object.<anonymous> (${import.meta.url})`);
        return [];
      },
      findOne: async () => null,
      findById: async () => null,
      insert: async (data) => {
        calls.push(['insert', idOrName, data]);
        return { id: 1, data };
      },
      update: async () => null,
      removeById: async () => null,
      query: async () => null,
      commit: async () => null,
    }),
  },
  notifications: { create: async () => ({}) },
};

const script = (code: string, limits = {}) =>
  runPipeline({ environment: 'client', services, limits, functions: [{ functionPackage: 'com.client.function.script', settings: { code } }] });
const result = (o: RunOutcome) => {
  if (!o.ok) throw new Error(`run failed: ${o.error.code} ${o.error.errorMessage}`);
  return o.result;
};

describe('sandbox escape attempts', () => {
  test('capability probes: process, require, fetch, window, document, localStorage, setTimeout, XMLHttpRequest, host bridges are absent', async () => {
    const names = [
      'process',
      'require',
      'module',
      'fetch',
      'window',
      'document',
      'localStorage',
      'setTimeout',
      'setInterval',
      'XMLHttpRequest',
      'WebSocket',
      'Worker',
      'importScripts',
      'host',
      'note',
      'Deno',
      'Bun',
      'global',
    ];
    const o = await script(`return ${JSON.stringify(names)}.map(n => [n, typeof globalThis[n]])`);
    expect(result(o)).toEqual(names.map((n) => [n, 'undefined']));
  });

  test('dynamic import() is refused', async () => {
    const o = await script('try { await import("node:fs"); return "imported" } catch (e) { return "refused: " + e.name }');
    expect(String(result(o))).toMatch(/^refused/);
  });

  test('constructor-chain traversal reaches only the guest global', async () => {
    const o = await script(`
      const g = this.constructor.constructor('return globalThis')();
      const g2 = (() => {}).constructor('return this')();
      const g3 = Object.getPrototypeOf(async function () {}).constructor('return globalThis')();
      return [g === globalThis, g2 === globalThis, typeof g.process, typeof g.require, typeof g.Client, typeof g3.fetch];`);
    expect(result(o)).toEqual([true, true, 'undefined', 'undefined', 'object', 'undefined']);
  });

  test('prototype pollution of Object.prototype / Array.prototype is not visible to the host or the next run', async () => {
    const o = await script(
      'Object.prototype.polluted = "yes"; Array.prototype.push = () => "hijacked"; Object.prototype.toJSON = undefined; return { ok: [].push(1) }',
    );
    expect(result(o)).toEqual({ ok: 'hijacked' });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    const arr: number[] = [];
    arr.push(1);
    expect(arr).toEqual([1]);
    const next = await script('return [typeof ({}).polluted, [1].push(2)]');
    expect(result(next)).toEqual(['undefined', 2]);
  });

  test('hostile values returned to the host: a throwing getter is refused with a clean error', async () => {
    const o = await script('return { get boom() { throw new Error("getter trap") } }');
    expect(o.ok).toBe(false);
    if (!o.ok) expect(o.error.errorMessage).toContain('getter trap');
  });

  test('hostile values: a toJSON that never returns is stopped by the deadline', async () => {
    const o = await script('return { toJSON() { for (;;) {} } }', { runTimeoutMs: 300 });
    expect(o.ok === false && o.error.code).toBe('TIMEOUT');
  });

  test('hostile values: cycles are refused, deep nesting fails cleanly', async () => {
    const cyc = await script('const a = {}; a.self = a; return a');
    expect(cyc.ok === false && cyc.error.errorType).toBe('TypeError');
    const deep = await script('let o = {}; for (let i = 0; i < 200000; i++) o = { o }; return o');
    expect(deep.ok).toBe(false);
    const after = await script('return 1');
    expect(result(after)).toBe(1);
  });

  test('hostile values: a Proxy is copied as plain data (its traps run in the guest) or refused', async () => {
    const plain = await script('return new Proxy({ a: 1 }, { get: (t, k) => k === "a" ? 2 : t[k] })');
    expect(result(plain)).toEqual({ a: 2 });
    const hostile = await script('return new Proxy({}, { ownKeys() { throw new Error("trap") } })');
    expect(hostile.ok).toBe(false);
  });

  test('hostile values: __proto__ keys arrive as plain own data, never as a prototype', async () => {
    const o = await script('return JSON.parse(\'{"__proto__": {"polluted": true}, "constructor": {"prototype": {"polluted": true}}}\')');
    const value = result(o) as Record<string, unknown>;
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
    expect(Object.hasOwn(value, '__proto__')).toBe(true);
    expect((value as { polluted?: unknown }).polluted).toBeUndefined();
    expect(({} as { polluted?: unknown }).polluted).toBeUndefined();
  });

  test('host errors passed into the guest carry no host stack or paths', async () => {
    const o = await script(
      'try { await Client.DataSources.connect("broken").find() } catch (e) { return { name: e.name, stack: String(e.stack), keys: Object.keys(e) } }',
    );
    const value = result(o) as { name: string; stack: string; keys: string[] };
    expect(value.name).toBe('Error');
    expect(value.stack).not.toMatch(/node_modules|\/work\/|file:|\.ts:|sandbox-escape/);
  });

  test('re-entrant bridge calls after the run ended are refused (never reach the host)', async () => {
    calls.length = 0;
    const o = await script('Client.DataSources.connect("slow").find().then(() => Client.DataSources.connect(1).insert({ late: true })); return "done"');
    expect(result(o)).toBe('done');
    await new Promise((r) => setTimeout(r, 100));
    expect(calls).toEqual([['find', 'slow']]);
  });

  test('the guest Client is frozen and exposes only the bridged operations', async () => {
    const o = await script(
      '"use strict"; let replaced; try { Client.DataSources = 1; replaced = true } catch (e) { replaced = false } return [replaced, Object.keys(Client), Object.keys(Client.DataSources.connect(1)).sort()]',
    );
    expect(result(o)).toEqual([false, ['DataSources', 'Notifications'], ['commit', 'find', 'findById', 'findOne', 'insert', 'query', 'removeById', 'update']]);
  });

  test('host functions cannot be abused with bad arguments', async () => {
    const o = await script('try { await Client.DataSources.connect({ toString() { return "x" } }).find() } catch (e) { return e.message }');
    expect(String(result(o))).toMatch(/id or name/);
  });
});
