import { createHash } from 'node:crypto';
import { expect } from 'vitest';
import { benchRow } from './bench-api.js';

/**
 * What the version-data benches share (SQLite and PostgreSQL): the history written over HTTP, the streamed read
 * of a version's data, and the measurement (wall, CPU, peak RSS above the start).
 */
export const VERSION_RUNS = 3;
const mb = (bytes: number) => bytes / 2 ** 20;

/** CPU time of this process (server and client, all threads), ms: less sensitive than wall time to other load. */
const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

export interface Measured<T> {
  ms: number;
  cpu: number;
  peakMb: number;
  /** The peaks of the V8 heap in use and of the memory outside it (Buffers), above their values at the start, MB. */
  heapMb: number;
  externalMb: number;
  result: T;
}

/**
 * Median wall and CPU time (ms) over VERSION_RUNS runs after a warm-up, and the highest RSS seen above the RSS
 * before the warm-up (MB; the heap keeps what the warm-up grew).
 */
export async function measure<T>(fn: () => Promise<T> | T): Promise<Measured<T>> {
  const start = process.memoryUsage();
  const base = start.rss;
  let peak = base;
  let heap = start.heapUsed;
  let external = start.external;
  const sample = () => {
    const now = process.memoryUsage();
    peak = Math.max(peak, now.rss);
    heap = Math.max(heap, now.heapUsed);
    external = Math.max(external, now.external);
  };
  const sampler = setInterval(sample, 10);
  let result = await fn();
  const times: number[] = [];
  const cpus: number[] = [];
  for (let i = 0; i < VERSION_RUNS; i++) {
    const t = performance.now();
    const cpu = cpuMs();
    result = await fn();
    times.push(performance.now() - t);
    cpus.push(cpuMs() - cpu);
    sample();
  }
  clearInterval(sampler);
  const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  return {
    ms: median(times),
    cpu: median(cpus),
    peakMb: mb(peak - base),
    heapMb: mb(heap - start.heapUsed),
    externalMb: mb(external - start.external),
    result,
  };
}

type Api = (method: string, path: string, body?: unknown) => Promise<any>;

/**
 * The history after the `n` loaded entries (ids from `firstId`): the old version is the one the first commit takes
 * (it updates 1,000 entries and deletes 500); then an append of 5,000, 100 single inserts and a commit updating 2,000
 * more. Returns the old version's id.
 */
export async function writeHistory(api: Api, ds: number, n: number, firstId: number): Promise<number> {
  const id = (k: number) => firstId + ((k * 7919) % n);
  await api('POST', `/v1/data-sources/${ds}/commit`, {
    append: true,
    entries: Array.from({ length: 1_000 }, (_, k) => ({ id: id(k), data: { ...benchRow(k), updated: 1 } })),
    delete: Array.from({ length: 500 }, (_, k) => id(1_000 + k)),
  });
  const [oldVersion] = (await api('GET', `/v1/data-sources/${ds}/versions`)).versions as { id: number }[];
  await api('POST', `/v1/data-sources/${ds}/data`, { append: true, entries: Array.from({ length: 5_000 }, (_, k) => benchRow(n + k)) });
  for (let k = 0; k < 100; k++) await api('PUT', `/v1/data-sources/${ds}/data`, benchRow(-k));
  await api('POST', `/v1/data-sources/${ds}/commit`, {
    append: true,
    entries: Array.from({ length: 2_000 }, (_, k) => ({ id: id(k * 3), data: { ...benchRow(k), updated: 2 } })),
  });
  return oldVersion!.id;
}

/** Reads a streamed answer chunk by chunk, hashing and dropping each: its size and hash. */
export async function readStreamed(url: string, apiToken: string): Promise<{ bytes: number; hash: string }> {
  const res = await fetch(url, { headers: { 'Auth-token': apiToken } });
  expect(res.status).toBe(200);
  const hash = createHash('sha256');
  let bytes = 0;
  const reader = res.body!.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    bytes += value.length;
    hash.update(value);
  }
  return { bytes, hash: hash.digest('hex') };
}

/** Size and hash of the answer the old code path built as one string. */
export const hashText = (text: string) => ({ bytes: Buffer.byteLength(text), hash: createHash('sha256').update(text).digest('hex') });

/** One row of the benches' table: wall, CPU, peak RSS, and the ratios to the bare statement (wall) and bare statement + text (CPU). */
export function tableRow(name: string, m: Measured<unknown>, bare: Measured<unknown>, bareText: Measured<unknown>): string {
  return `| ${name} | ${m.ms.toFixed(0)} | ${m.cpu.toFixed(0)} | ${m.peakMb.toFixed(0)} MB (heap ${m.heapMb.toFixed(0)}, external ${m.externalMb.toFixed(0)}) | ${(m.ms / bare.ms).toFixed(1)} | ${(m.cpu / bareText.cpu).toFixed(1)} |`;
}

export const TABLE_HEAD = [
  '| case | wall ms | CPU ms | peak RSS above start (peak heap, external) | wall ÷ bare same SQL | CPU ÷ bare same SQL + text |',
  '| --- | --- | --- | --- | --- | --- |',
];
