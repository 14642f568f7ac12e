#!/usr/bin/env node
// `node scripts/bench-install.mjs [--server] [--cold]` (after `npm run build`): how long `npm install` of the
// packed package takes in a fresh project, and how big its node_modules is (du). Figures: docs/benchmarks.md.
//   default   the app's install: `npm install <tarball>` (the client only)
//   --server  also a self-hosted backend's: the tarball plus the server's packages (optional peers), which is
//             what every install got before they became peers (better-sqlite3 compiles from source here)
//   --cold    with an empty npm cache (everything downloaded from the registry); default: npm's cache, --prefer-offline
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const args = new Set(process.argv.slice(2));
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const peers = Object.keys(pkg.peerDependencies ?? {}).map((name) => `${name}@${pkg.devDependencies[name]}`);

const work = mkdtempSync(join(tmpdir(), 'iar-bench-install-'));
try {
  const [{ filename }] = JSON.parse(
    execFileSync('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', work], {
      cwd: root,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }),
  );
  const tarball = join(work, filename);
  const scenarios = [['client only', [tarball]], ...(args.has('--server') ? [['client + server peers', [tarball, ...peers]]] : [])];
  for (const [name, specs] of scenarios) {
    const app = join(work, name.replace(/\W+/g, '-'));
    mkdirSync(app);
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'bench-app', private: true }));
    const cache = args.has('--cold') ? ['--cache', join(work, `cache-${name.replace(/\W+/g, '-')}`)] : ['--prefer-offline'];
    const started = performance.now();
    execFileSync('npm', ['install', '--no-audit', '--no-fund', ...cache, ...specs], { cwd: app, stdio: ['ignore', 'ignore', 'inherit'] });
    const seconds = (performance.now() - started) / 1000;
    const kb = Number(execFileSync('du', ['-sk', join(app, 'node_modules')], { encoding: 'utf8' }).split('\t')[0]);
    const packages =
      execFileSync('npm', ['ls', '--all', '--parseable'], { cwd: app, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })
        .trim()
        .split('\n').length - 1;
    console.log(
      `${name}${args.has('--cold') ? ' (empty cache)' : ''}: ${seconds.toFixed(1)} s, ${(kb / 1024).toFixed(1)} MB node_modules, ${packages} packages`,
    );
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
