import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import webpush from 'web-push';
import { describe, expect, it } from 'vitest';
import { checkServerImport, checkServerStart, CORE_PACKAGES, isInstalled, SERVER_PACKAGES, type ServerPackage } from '../../src/server/dependencies.js';
import { generateVapidKeys } from '../../src/server/notifications/vapid.js';

const ROOT = resolve(__dirname, '../..');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
  peerDependenciesMeta: Record<string, { optional?: boolean }>;
};
const SERVER = Object.keys(SERVER_PACKAGES) as ServerPackage[];

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : path.endsWith('.ts') ? [path] : [];
  });
}
/** Package names imported for their values (`import type` left out) by the files under src/ that `keep` accepts. */
function importedPackages(keep: (rel: string) => boolean): Set<string> {
  const names = new Set<string>();
  const IMPORT = /^\s*(?:import|export)\s+(?!type\s)[^'"]*?from\s*['"]([^'"]+)['"]|(?<!typeof )import\(\s*['"]([^'"]+)['"]\s*\)/gm;
  for (const file of files(join(ROOT, 'src'))) {
    if (!keep(relative(join(ROOT, 'src'), file))) continue;
    for (const match of readFileSync(file, 'utf8').matchAll(IMPORT)) {
      const spec = (match[1] ?? match[2])!;
      if (spec.startsWith('.') || spec.startsWith('node:')) continue;
      names.add(spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!);
    }
  }
  return names;
}

describe('package.json: a light install for app code', () => {
  it('dependencies are exactly the packages the client code imports', () => {
    const client = importedPackages((rel) => !rel.startsWith('server/'));
    expect(Object.keys(pkg.dependencies).sort()).toEqual([...client].sort());
  });

  it('the server-only packages are optional peers, pinned in devDependencies at the versions the error message names', () => {
    const serverOnly = [...importedPackages((rel) => rel.startsWith('server/'))].filter((name) => !(name in pkg.dependencies));
    expect(serverOnly.sort()).toEqual([...SERVER].sort());
    for (const name of SERVER) {
      expect(pkg.devDependencies[name], name).toBe(SERVER_PACKAGES[name]);
      expect(pkg.peerDependencies[name], name).toBe(`^${SERVER_PACKAGES[name]}`);
      expect(pkg.peerDependenciesMeta[name], name).toEqual({ optional: true });
    }
    expect(Object.keys(pkg.peerDependencies).sort()).toEqual([...SERVER].sort());
  });

  it('the install commands of README.md and docs/postgres.md name the same versions', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const backend = [...CORE_PACKAGES, 'better-sqlite3', 'web-push'] as const;
    expect(readme).toContain(`\`npm install in-app-runtime ${backend.map((name) => `${name}@${SERVER_PACKAGES[name]}`).join(' ')}\``);
    expect(readme).toContain(`\`pg@${SERVER_PACKAGES.pg}\` instead of \`better-sqlite3\``);
    const postgres = [...CORE_PACKAGES, 'pg', 'web-push'] as const;
    expect(readFileSync(join(ROOT, 'docs/postgres.md'), 'utf8')).toContain(
      `\`npm install in-app-runtime ${postgres.map((name) => `${name}@${SERVER_PACKAGES[name]}`).join(' ')}\``,
    );
  });
});

describe('in-app-runtime/server names what to install', () => {
  const without =
    (...missing: ServerPackage[]) =>
    (name: ServerPackage) =>
      !missing.includes(name);

  it('importing it with nothing installed names the core and the default setup, with the exact versions', () => {
    expect(() => checkServerImport(without(...SERVER))).toThrowError(
      'in-app-runtime/server needs: npm install hono@4.13.19 @hono/node-server@1.19.19 mingo@7.2.7 cron-parser@5.10.5 ' +
        'better-sqlite3@12.10.0 web-push@3.6.7 (better-sqlite3 for the SQLite store, the default: with `databaseUrl` install ' +
        'pg@8.23.1 instead; web-push for Web Push delivery, not needed with your own `pushSender`)',
    );
  });

  it('only what is missing is named; the store drivers and web-push do not stop the import', () => {
    expect(() => checkServerImport(without('mingo'))).toThrowError(/^in-app-runtime\/server needs: npm install mingo@7\.2\.7$/);
    expect(() => checkServerImport(without('better-sqlite3', 'pg', 'web-push'))).not.toThrow();
    const error = (() => {
      try {
        checkServerImport(without('hono', 'pg'));
      } catch (thrown) {
        return thrown;
      }
    })();
    expect(error).toMatchObject({ code: 'ERR_IAR_MISSING_PACKAGES', missing: ['hono'] });
  });

  it('startServer needs the driver of its store, and web-push unless a pushSender is given', () => {
    expect(() => checkServerStart({ postgres: false, pushSender: false }, without('pg'))).not.toThrow();
    expect(() => checkServerStart({ postgres: true, pushSender: true }, without('better-sqlite3', 'web-push'))).not.toThrow();
    expect(() => checkServerStart({ postgres: true, pushSender: false }, without('pg'))).toThrowError(
      'in-app-runtime/server startServer() needs: npm install pg@8.23.1 (pg for the PostgreSQL store (`databaseUrl`))',
    );
    expect(() => checkServerStart({ postgres: false, pushSender: false }, without('better-sqlite3', 'web-push'))).toThrowError(
      /needs: npm install better-sqlite3@12\.10\.0 web-push@3\.6\.7 \(/,
    );
  });

  it('resolves installed packages from the server code', () => {
    for (const name of SERVER) expect(isInstalled(name), name).toBe(true);
    expect(isInstalled('in-app-runtime-no-such-package')).toBe(false);
    expect(CORE_PACKAGES.every((name) => name in SERVER_PACKAGES)).toBe(true);
  });

  it('the entry passes on every export of the server', async () => {
    const [entry, server] = await Promise.all([import('../../src/server/entry.js'), import('../../src/server/index.js')]);
    expect(Object.keys(entry).sort()).toEqual(Object.keys(server).sort());
    expect(entry.startServer).toBe(server.startServer);
  });
});

describe('VAPID keys without web-push', () => {
  it('are keys web-push signs with', () => {
    for (let i = 0; i < 20; i++) {
      const keys = generateVapidKeys();
      expect(Buffer.from(keys.publicKey, 'base64url')).toHaveLength(65);
      expect(Buffer.from(keys.privateKey, 'base64url')).toHaveLength(32);
      const headers = webpush.getVapidHeaders('https://push.example.com', 'mailto:a@example.com', keys.publicKey, keys.privateKey, 'aes128gcm');
      expect(headers.Authorization).toMatch(/^vapid t=.+, k=/);
    }
  });
});
