import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

/**
 * Throwaway PostgreSQL clusters for tests and benchmarks: `initdb` into a temp
 * folder, `pg_ctl start` on a free loopback port (socket in the same folder),
 * run as the `postgres` system user when we are root (the server refuses root).
 *
 * Within a vitest run the cluster is shared: the global setup
 * (test/helpers/postgres-global.ts) hands out a folder, and the first test file
 * that needs PostgreSQL starts the cluster there (the others wait for it); the
 * global teardown stops it. `IAR_TEST_PG_URL=postgres://…` uses an existing
 * server instead (a database is created per test backend).
 */

export interface PostgresCluster {
  /** Admin URL (database `postgres`). */
  url: string;
  port: number;
  dir: string;
  stop(): void;
}

const BIN_CANDIDATES = [process.env.IAR_PG_BIN, '/usr/lib/postgresql/17/bin', '/usr/lib/postgresql/16/bin', '/usr/lib/postgresql/15/bin'];

export function postgresBinDir(): string {
  for (const dir of BIN_CANDIDATES) if (dir && existsSync(join(dir, 'initdb'))) return dir;
  const found = spawnSync('sh', ['-c', 'command -v initdb'], { encoding: 'utf8' }).stdout.trim();
  if (found) return found.replace(/\/initdb$/, '');
  throw new Error('PostgreSQL is not installed (no initdb): apt-get install -y postgresql, or set IAR_PG_BIN / IAR_TEST_PG_URL');
}

const isRoot = () => process.getuid?.() === 0;

/** The system user the server runs as when we are root (created when missing). */
function serverUser(): { name: string; uid: number; gid: number } | undefined {
  if (!isRoot()) return undefined;
  let id = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' });
  if (id.status !== 0) {
    execFileSync('useradd', ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin', 'postgres']);
    id = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' });
  }
  const gid = Number(spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).stdout.trim());
  return { name: 'postgres', uid: Number(id.stdout.trim()), gid };
}

function runAsServer(bin: string, args: string[]): void {
  const user = serverUser();
  const [cmd, argv] = user ? ['runuser', ['-u', user.name, '--', bin, ...args]] : [bin, args];
  const result = spawnSync(cmd, argv, { encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`${bin} failed (${result.status}): ${result.stderr || result.stdout}`);
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Starts a new cluster in `dir` (created when missing). Settings favour speed: this data is thrown away. */
export async function startPostgresCluster(dir = mkdtempSync(join(tmpdir(), 'iar-pg-'))): Promise<PostgresCluster> {
  const bin = postgresBinDir();
  mkdirSync(dir, { recursive: true });
  const user = serverUser();
  if (user) chownSync(dir, user.uid, user.gid);
  chmodSync(dir, 0o700);
  const data = join(dir, 'data');
  runAsServer(join(bin, 'initdb'), ['-D', data, '--auth=trust', '--username=postgres', '--encoding=UTF8', '--locale=C', '--no-sync']);
  const port = await freePort();
  const settings = [
    `-p ${port}`,
    `-k ${dir}`,
    '-c listen_addresses=127.0.0.1',
    '-c max_connections=300',
    '-c fsync=off',
    '-c synchronous_commit=off',
    '-c full_page_writes=off',
    '-c max_pred_locks_per_transaction=256',
  ].join(' ');
  runAsServer(join(bin, 'pg_ctl'), ['-D', data, '-o', settings, '-l', join(dir, 'server.log'), '-w', '-t', '60', 'start']);
  let stopped = false;
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    dir,
    stop() {
      if (stopped) return;
      stopped = true;
      stopPostgresCluster(dir);
    },
  };
}

/** Stops the cluster of `dir` (if it runs) and removes the folder. */
export function stopPostgresCluster(dir: string): void {
  const data = join(dir, 'data');
  if (existsSync(join(data, 'postmaster.pid'))) {
    try {
      runAsServer(join(postgresBinDir(), 'pg_ctl'), ['-D', data, '-m', 'immediate', '-w', 'stop']);
    } catch (error) {
      console.error('[postgres helper] stop failed', error);
    }
  }
  rmSync(dir, { recursive: true, force: true });
}

let shared: Promise<string> | undefined;

/**
 * Admin URL of the PostgreSQL server of this test run: `IAR_TEST_PG_URL`, else
 * the shared cluster of the global setup's folder (`IAR_TEST_PG_DIR`), started
 * on first use by whichever test file asks first; else (outside vitest's global
 * setup, e.g. a benchmark) a cluster of this process, stopped at exit.
 */
export function testPostgresUrl(): Promise<string> {
  shared ??= (async () => {
    if (process.env.IAR_TEST_PG_URL) return process.env.IAR_TEST_PG_URL;
    const dir = process.env.IAR_TEST_PG_DIR;
    if (!dir) {
      const cluster = await startPostgresCluster();
      process.once('exit', () => cluster.stop());
      return cluster.url;
    }
    const ready = join(dir, 'url');
    const failed = join(dir, 'error');
    try {
      mkdirSync(join(dir, 'lock'));
    } catch {
      // Another test file starts it: wait for its answer.
      const deadline = Date.now() + 120_000;
      while (Date.now() < deadline) {
        if (existsSync(ready)) return readFileSync(ready, 'utf8');
        if (existsSync(failed)) throw new Error(readFileSync(failed, 'utf8'));
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      throw new Error('Timed out waiting for the shared PostgreSQL cluster');
    }
    try {
      const cluster = await startPostgresCluster(join(dir, 'cluster'));
      writeFileSync(ready + '.tmp', cluster.url);
      renameSync(ready + '.tmp', ready);
      return cluster.url;
    } catch (error) {
      writeFileSync(failed, String((error as Error).message ?? error));
      throw error;
    }
  })();
  return shared;
}

/** Creates an empty database on the test server; `drop()` removes it (closing leftover connections). */
export async function createTestDatabase(prefix = 'iar'): Promise<{ url: string; name: string; drop(): Promise<void> }> {
  const adminUrl = await testPostgresUrl();
  const name = `${prefix}_${process.pid}_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    async drop() {
      const client = new pg.Client({ connectionString: adminUrl });
      await client.connect();
      try {
        await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await client.end();
      }
    },
  };
}

/**
 * A throwaway cluster of its own with one empty database `name` (benchmarks: each starts and stops its own, in
 * `finally`, since an exit hook does not run when a bench worker ends). `url`: the database's URL.
 */
export async function startClusterWithDatabase(name: string): Promise<{ cluster: PostgresCluster; url: string }> {
  const cluster = await startPostgresCluster();
  const admin = new pg.Client({ connectionString: cluster.url });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(cluster.url);
  url.pathname = `/${name}`;
  return { cluster, url: url.toString() };
}
