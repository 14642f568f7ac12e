import { readFileSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { expect, it } from 'vitest';
import { startServer } from '../../src/server/index.js';
import { startClusterWithDatabase } from '../helpers/postgres.js';
import { barePostgres, bareSqlite } from './bare-entries.js';
import { startClientThread } from './client-thread.js';

/**
 * Issue 14, "writes cost what they change": a one-entry commit (`append`, its answer holds the whole data set) and
 * a one-entry insert at 300,000 entries, over HTTP against the real backend (in-memory SQLite, or PostgreSQL with
 * `BENCH_DB=postgres`), beside a bare baseline of the same engine in the same run (bare-entries.ts): read, parse and
 * serialize every row (what the answer needs) and insert one row.
 * Goals (issue 14): the commit ≤ 1.5 s at 300k; at 1M an insert ≤ 5 ms and the import ≤ 30 s. `BENCH_ENTRIES` changes
 * the size.
 */
const N = Number(process.env.BENCH_ENTRIES ?? 300_000);
/**
 * `BENCH_CPU_PROFILE=<dir>`: CPU profiles of the commits whose client is on a worker thread, one of the server's
 * thread (`server.cpuprofile`) and one of the client's (`client.cpuprofile`).
 */
const PROFILE_DIR = process.env.BENCH_CPU_PROFILE;
/** CPU time of this process's main thread (the server's: the bench's client is elsewhere), ms; Linux only. */
const mainThreadCpuMs = () => {
  try {
    const fields = readFileSync(`/proc/${process.pid}/task/${process.pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return Number.NaN;
  }
};
/** `BENCH_COMMITS=0` measures the import and the inserts only (at 1M a commit's answer is 240 MB). */
const COMMITS = Number(process.env.BENCH_COMMITS ?? 5);
/** `BENCH_DB=postgres`: the server on a throwaway PostgreSQL cluster (test/helpers/postgres.ts), the baseline a bare table there. */
const POSTGRES = process.env.BENCH_DB === 'postgres';
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const row = (i: number) => ({ name: `Person ${i}`, email: `person${i}@example.com`, age: i % 90, city: ['Cork', 'Oslo', 'Lima'][i % 3], active: i % 3 !== 0 });

it(`one-entry writes at ${N.toLocaleString('en')} entries (${POSTGRES ? 'PostgreSQL' : 'SQLite'})`, async () => {
  // A PostgreSQL cluster of this run, stopped in `finally` (an exit hook does not run when the bench worker ends).
  const pgDb = POSTGRES ? await startClusterWithDatabase('iar_commitbench') : undefined;
  const cluster = pgDb?.cluster;
  const databaseUrl = pgDb?.url;
  const limits = { bodyBytes: 64 * 1024 * 1024 };
  const server = await startServer(databaseUrl ? { port: 0, databaseUrl, log: false, limits } : { port: 0, memory: true, log: false, limits });
  try {
    const { appId, apiToken } = server.bootstrap;
    const api = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(server.url + path, {
        method,
        headers: { 'Auth-token': apiToken, 'Content-Type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 200)}`);
      return text;
    };
    const ds = JSON.parse(await api('POST', `/v1/data-sources?appId=${appId}`, { name: 'Large' })).dataSource.id as number;
    const importStart = performance.now();
    for (let start = 0; start < N; start += 100_000) {
      await api('POST', `/v1/data-sources/${ds}/data`, {
        append: true,
        entries: Array.from({ length: Math.min(100_000, N - start) }, (_, i) => row(start + i)),
      });
    }
    const importMs = performance.now() - importStart;
    const rssAfterImportMb = process.memoryUsage().rss / 1024 / 1024;
    // Inserts alone first (each after the last, as a screen adds rows), then commits with an insert after each.
    const insertAlone: number[] = [];
    for (let i = 0; i < 21; i++) {
      const t = performance.now();
      await api('PUT', `/v1/data-sources/${ds}/data`, row(-100 - i));
      if (i > 0) insertAlone.push(performance.now() - t);
    }
    const commit: number[] = [];
    const commitCpu: number[] = [];
    const insert: number[] = [];
    /** CPU time of this process (server and client, all threads), ms: less sensitive than wall time to other load. */
    const cpuMs = () => {
      const u = process.cpuUsage();
      return (u.user + u.system) / 1000;
    };
    let answerBytes = 0;
    // The highest RSS seen while the commits (and the lists) run (sampled every 10 ms; server and client share this process).
    let peakRssMb = 0;
    const sampler = setInterval(() => (peakRssMb = Math.max(peakRssMb, process.memoryUsage().rss / 1024 / 1024)), 10);
    for (let i = 0; i < (COMMITS > 0 ? COMMITS + 1 : 0); i++) {
      let t = performance.now();
      const cpu = cpuMs();
      const text = await api('POST', `/v1/data-sources/${ds}/commit`, { append: true, entries: [{ data: row(N + i) }] });
      if (i > 0) commit.push(performance.now() - t);
      if (i > 0) commitCpu.push(cpuMs() - cpu);
      answerBytes = text.length;
      t = performance.now();
      await api('PUT', `/v1/data-sources/${ds}/data`, row(-i));
      if (i > 0) insert.push(performance.now() - t);
    }
    // The list of every entry (integration clients list before they commit): the same size as a commit's answer.
    const list: number[] = [];
    const listCpu: number[] = [];
    for (let i = 0; i < (COMMITS > 0 ? 4 : 0); i++) {
      const t = performance.now();
      const cpu = cpuMs();
      await api('GET', `/v1/data-sources/${ds}/data`);
      if (i > 0) list.push(performance.now() - t);
      if (i > 0) listCpu.push(cpuMs() - cpu);
    }
    // The same commits and lists with the client on a worker thread (another core, as another machine would be):
    // the wall time is the client's, from sending to the last byte read; CPU is the process's and the server's thread.
    const client = startClientThread();
    const headers = { 'Auth-token': apiToken, 'Content-Type': 'application/json' };
    const remote = async (method: string, path: string, body?: unknown) => {
      const res = await client.request(method, server.url + path, headers, body === undefined ? undefined : JSON.stringify(body));
      if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${res.head}`);
      return res;
    };
    const far = {
      commit: [] as number[],
      commitCpu: [] as number[],
      commitMainCpu: [] as number[],
      list: [] as number[],
      listCpu: [] as number[],
      listMainCpu: [] as number[],
    };
    const session = PROFILE_DIR ? new Session() : undefined;
    const post = (method: string, params?: object) =>
      new Promise<unknown>((resolve, reject) => session!.post(method, params, (e, r) => (e ? reject(e) : resolve(r))));
    for (let i = 0; i < (COMMITS > 0 ? COMMITS + 1 : 0); i++) {
      if (session && i === 1) {
        session.connect();
        await post('Profiler.enable');
        await post('Profiler.setSamplingInterval', { interval: 200 });
        await post('Profiler.start');
        await client.startProfile();
      }
      const cpu = cpuMs();
      const mainCpu = mainThreadCpuMs();
      const res = await remote('POST', `/v1/data-sources/${ds}/commit`, { append: true, entries: [{ data: row(2 * N + i) }] });
      if (i > 0) {
        far.commit.push(res.ms);
        far.commitCpu.push(cpuMs() - cpu);
        far.commitMainCpu.push(mainThreadCpuMs() - mainCpu);
      }
      if (res.bytes < answerBytes) throw new Error(`a commit answered ${res.bytes} bytes`);
      await remote('PUT', `/v1/data-sources/${ds}/data`, row(-1000 - i));
    }
    if (session && COMMITS > 0) {
      const { profile } = (await post('Profiler.stop')) as { profile: unknown };
      session.disconnect();
      writeFileSync(`${PROFILE_DIR}/server.cpuprofile`, JSON.stringify(profile));
      writeFileSync(`${PROFILE_DIR}/client.cpuprofile`, await client.stopProfile());
    }
    for (let i = 0; i < (COMMITS > 0 ? 4 : 0); i++) {
      const cpu = cpuMs();
      const mainCpu = mainThreadCpuMs();
      const res = await remote('GET', `/v1/data-sources/${ds}/data`);
      if (i > 0) {
        far.list.push(res.ms);
        far.listCpu.push(cpuMs() - cpu);
        far.listMainCpu.push(mainThreadCpuMs() - mainCpu);
      }
    }
    await client.close();
    clearInterval(sampler);
    const rssMb = process.memoryUsage().rss / 1024 / 1024;

    // Baseline: the same rows in a bare table of the same engine; read and parse all (the answer), insert one.
    const bare = POSTGRES ? await barePostgres(databaseUrl!) : bareSqlite();
    const bareImportStart = performance.now();
    for (let start = 0; start < N; start += 100_000)
      await bare.insert(Array.from({ length: Math.min(100_000, N - start) }, (_, k) => ({ data: JSON.stringify(row(start + k)), order: start + k })));
    const bareImportMs = performance.now() - bareImportStart;
    const bareCommit: number[] = [];
    const bareCommitCpu: number[] = [];
    const bareInsert: number[] = [];
    for (let i = 0; i < 6; i++) {
      let t = performance.now();
      if (COMMITS === 0) {
        await bare.insert([{ data: JSON.stringify(row(N + i)), order: N + i }]);
        t = performance.now();
        await bare.insert([{ data: JSON.stringify(row(-i)), order: 0 }]);
        if (i > 0) bareInsert.push(performance.now() - t);
        continue;
      }
      const cpu = cpuMs();
      await bare.insert([{ data: JSON.stringify(row(N + i)), order: N + i }]);
      const entries = (await bare.readAll()).map((r) => ({ ...r, data: JSON.parse(r.data) }));
      JSON.stringify({ entries });
      if (i > 0) bareCommit.push(performance.now() - t);
      if (i > 0) bareCommitCpu.push(cpuMs() - cpu);
      t = performance.now();
      await bare.insert([{ data: JSON.stringify(row(-i)), order: 0 }]);
      if (i > 0) bareInsert.push(performance.now() - t);
    }
    await bare.close();
    const rows = [
      `| case (${N.toLocaleString('en')} entries, ${POSTGRES ? 'PostgreSQL' : 'SQLite'}) | ms | bare ${POSTGRES ? 'PostgreSQL' : 'SQLite'} ms | ratio |`,
      '| --- | --- | --- | --- |',
    ];
    if (COMMITS > 0)
      rows.push(
        `| one-entry commit (answer: the whole data set, ${(answerBytes / 1e6).toFixed(1)} MB), client in the server's thread | ${median(commit).toFixed(0)} | ${median(bareCommit).toFixed(0)} | ${(median(commit) / median(bareCommit)).toFixed(1)} |`,
        `| one-entry commit, CPU time of the process | ${median(commitCpu).toFixed(0)} | ${median(bareCommitCpu).toFixed(0)} | ${(median(commitCpu) / median(bareCommitCpu)).toFixed(1)} |`,
        `| list every entry (GET …/data), median of 3, client in the server's thread | ${median(list).toFixed(0)} | ${median(bareCommit).toFixed(0)} | ${(median(list) / median(bareCommit)).toFixed(1)} |`,
        `| list every entry, CPU time of the process | ${median(listCpu).toFixed(0)} | ${median(bareCommitCpu).toFixed(0)} | ${(median(listCpu) / median(bareCommitCpu)).toFixed(1)} |`,
        `| one-entry commit, client on a worker thread: its wall time | ${median(far.commit).toFixed(0)} | ${median(bareCommit).toFixed(0)} | ${(median(far.commit) / median(bareCommit)).toFixed(1)} |`,
        `| one-entry commit, client on a worker thread: CPU time of the process (all threads) | ${median(far.commitCpu).toFixed(0)} | ${median(bareCommitCpu).toFixed(0)} | ${(median(far.commitCpu) / median(bareCommitCpu)).toFixed(1)} |`,
        `| one-entry commit, client on a worker thread: CPU time of the server's thread | ${median(far.commitMainCpu).toFixed(0)} | ${median(bareCommitCpu).toFixed(0)} | ${(median(far.commitMainCpu) / median(bareCommitCpu)).toFixed(1)} |`,
        `| list every entry, client on a worker thread: its wall time | ${median(far.list).toFixed(0)} | ${median(bareCommit).toFixed(0)} | ${(median(far.list) / median(bareCommit)).toFixed(1)} |`,
        `| list every entry, client on a worker thread: CPU time of the server's thread | ${median(far.listMainCpu).toFixed(0)} | ${median(bareCommitCpu).toFixed(0)} | ${(median(far.listMainCpu) / median(bareCommitCpu)).toFixed(1)} |`,
        `| insert one entry, right after a commit | ${median(insert).toFixed(1)} | ${median(bareInsert).toFixed(2)} | ${(median(insert) / median(bareInsert)).toFixed(0)} |`,
      );
    rows.push(
      `| insert one entry, inserts only (median of 20) | ${median(insertAlone).toFixed(1)} | ${median(bareInsert).toFixed(2)} | ${(median(insertAlone) / median(bareInsert)).toFixed(0)} |`,
      `| import in 100,000-entry chunks (HTTP bodies built in the same process) | ${importMs.toFixed(0)} | ${bareImportMs.toFixed(0)} | ${(importMs / bareImportMs).toFixed(1)} |`,
      `| process RSS (server and bench client) after the import | ${rssAfterImportMb.toFixed(0)} MB | | |`,
      `| process RSS after the writes | ${rssMb.toFixed(0)} MB | | |`,
      `| peak process RSS during the commits and lists (sampled every 10 ms) | ${peakRssMb.toFixed(0)} MB | | |`,
    );
    console.log(`\n${rows.join('\n')}`);
    expect(commit.length).toBe(COMMITS);
  } finally {
    await server.close();
    cluster?.stop();
  }
}, 900_000);
