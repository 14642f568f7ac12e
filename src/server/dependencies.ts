import { createRequire } from 'node:module';

/**
 * The server's own packages: optional peer dependencies of `in-app-runtime` (an app that only uses the client
 * installs none of them). The versions are the ones this package is built and tested with (package.json's
 * devDependencies pin them; test/unit/server-dependencies.test.ts keeps both lists equal).
 */
export const SERVER_PACKAGES = {
  hono: '4.13.19',
  '@hono/node-server': '1.19.19',
  mingo: '7.2.7',
  'cron-parser': '5.10.5',
  'better-sqlite3': '12.10.0',
  pg: '8.23.1',
  'web-push': '3.6.7',
} as const;

export type ServerPackage = keyof typeof SERVER_PACKAGES;

/** Needed to import `in-app-runtime/server` at all: the HTTP layer, queries' aggregate, the scheduler. */
export const CORE_PACKAGES: readonly ServerPackage[] = ['hono', '@hono/node-server', 'mingo', 'cron-parser'];

/** Why a package beyond the core is needed, as the error message says it. */
const PURPOSE: Partial<Record<ServerPackage, string>> = {
  'better-sqlite3': `for the SQLite store, the default: with \`databaseUrl\` install pg@${SERVER_PACKAGES.pg} instead`,
  pg: 'for the PostgreSQL store (`databaseUrl`)',
  'web-push': 'for Web Push delivery, not needed with your own `pushSender`',
};

/**
 * Whether `name` resolves from this file. Only "not found" means missing: a package found without an entry
 * for `require` (ERR_PACKAGE_PATH_NOT_EXPORTED) is installed.
 */
export function isInstalled(name: string, from: string = import.meta.url): boolean {
  try {
    createRequire(from).resolve(name);
    return true;
  } catch (error) {
    return (error as { code?: string }).code !== 'MODULE_NOT_FOUND';
  }
}

/** The error naming what to install: `<what> needs: npm install a@1 b@2 (b for …; …)`. */
export function missingPackagesError(what: string, missing: readonly ServerPackage[]): Error & { missing: ServerPackage[] } {
  const why = missing.filter((name) => PURPOSE[name]).map((name) => `${name} ${PURPOSE[name]}`);
  const error = new Error(
    `${what} needs: npm install ${missing.map((name) => `${name}@${SERVER_PACKAGES[name]}`).join(' ')}` + (why.length ? ` (${why.join('; ')})` : ''),
  ) as Error & { code: string; missing: ServerPackage[] };
  error.code = 'ERR_IAR_MISSING_PACKAGES';
  error.missing = [...missing];
  return error;
}

/**
 * Checked before `in-app-runtime/server` loads its code: the core packages, and, when one of them is missing
 * (a fresh `npm install in-app-runtime`), those of the default setup too (SQLite, Web Push) so that one
 * command installs all a first start needs. A PostgreSQL user without better-sqlite3 gets through.
 */
export function checkServerImport(installed: (name: ServerPackage) => boolean = (name) => isInstalled(name)): void {
  const core = CORE_PACKAGES.filter((name) => !installed(name));
  if (core.length === 0) return;
  const defaults = (['better-sqlite3', 'web-push'] as const).filter((name) => !installed(name));
  throw missingPackagesError('in-app-runtime/server', [...core, ...defaults]);
}

/** The packages `startServer(options)` loads: its store's driver, and web-push unless a `pushSender` is given. */
export function startNeeds(options: { postgres: boolean; pushSender: boolean }): ServerPackage[] {
  return [options.postgres ? 'pg' : 'better-sqlite3', ...(options.pushSender ? [] : (['web-push'] as const))];
}

/** Rejects `startServer` before it opens anything when a package its options need is not installed. */
export function checkServerStart(
  options: { postgres: boolean; pushSender: boolean },
  installed: (name: ServerPackage) => boolean = (name) => isInstalled(name),
): void {
  const missing = startNeeds(options).filter((name) => !installed(name));
  if (missing.length > 0) throw missingPackagesError('in-app-runtime/server startServer()', missing);
}
