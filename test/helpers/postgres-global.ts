import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stopPostgresCluster } from './postgres.js';

/**
 * vitest global setup: hands the test files a folder for one shared PostgreSQL
 * cluster (started lazily by the first file that needs it, see postgres.ts)
 * and stops that cluster when the run ends. Costs nothing when no test uses it.
 */
export default function setup(): () => void {
  if (process.env.IAR_TEST_PG_URL || process.env.IAR_TEST_PG_DIR) return () => undefined;
  const dir = mkdtempSync(join(tmpdir(), 'iar-pg-run-'));
  chmodSync(dir, 0o711); // the server's user must reach its cluster folder inside
  process.env.IAR_TEST_PG_DIR = dir;
  return () => {
    stopPostgresCluster(join(dir, 'cluster'));
    rmSync(dir, { recursive: true, force: true });
  };
}
