import { defineConfig } from 'vitest/config';

// `IAR_TEST_POSTGRES=1` (set by `npm test`) runs two projects in one run: every test on SQLite, and the
// integration suite again on PostgreSQL (`IAR_TEST_DB=postgres`, test/helpers/postgres.ts).
const bothEngines = process.env.IAR_TEST_POSTGRES === '1';

export default defineConfig({
  test: {
    // (With both engines, each project names its files: an include here would be merged into both.)
    ...(bothEngines ? {} : { include: ['test/**/*.test.ts'] }),
    exclude: ['test/bench/**', 'node_modules/**'],
    environment: 'node',
    pool: 'forks',
    testTimeout: 20_000,
    hookTimeout: 60_000,
    // Snapshots are recorded expectations (the pipeline engine's, recorded from its former oracle): a missing one
    // fails as in CI instead of being written from whatever the code does now. `vitest -u` records on purpose.
    update: 'none',
    reporters: ['default', './test/helpers/summary-reporter.ts'],
    // Clients keep retrying uploads in the background after their test; a log line they print while a test
    // worker shuts down made vitest fail the run (EnvironmentTeardownError) although every test passed.
    // Console output goes straight to the terminal instead of through the worker's RPC.
    disableConsoleIntercept: true,
    // Hands out a folder for a shared PostgreSQL cluster, started only when a test needs it.
    globalSetup: ['./test/helpers/postgres-global.ts'],
    ...(bothEngines
      ? {
          projects: [
            { extends: true, test: { name: 'sqlite', include: ['test/**/*.test.ts'] } },
            {
              extends: true,
              test: {
                name: 'postgres',
                include: ['test/integration/**/*.test.ts'],
                // postgres*.test.ts use PostgreSQL whatever the project, sqlite*.test.ts a SQLite file: run once,
                // in the sqlite project.
                exclude: ['test/integration/postgres*.test.ts', 'test/integration/sqlite*.test.ts'],
                env: { IAR_TEST_DB: 'postgres' },
              },
            },
          ],
        }
      : {}),
  },
});
