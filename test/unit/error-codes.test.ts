import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

/** Codes in src/ that never reach a user, with the reason. */
const INTERNAL: Record<string, string> = {
  DB_TERMINATED: 'PostgreSQL adapter marker of a cut connection (failover); a request caught by it answers 500 INTERNAL',
  GUEST_ERROR: 'sandbox-internal: mapped to FUNCTION_FAILED or EXPRESSION_FAILED (src/contract/pipeline-failure.ts)',
  MODULE_NOT_FOUND: "Node's own code, read by src/server/dependencies.ts to tell a missing package from a broken one",
  SQLITE_ERROR:
    "better-sqlite3's code of a statement SQLite refused, read by src/server/data-sources/sql-delete.ts (a JSON error hands the delete to the JS matcher)",
  ERR_WORKER_OUT_OF_MEMORY:
    "Node's own code of a worker thread past its resourceLimits, read by src/server/actions/threads/pool.ts (the run fails with WORKER_OUT_OF_MEMORY)",
};

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : path.endsWith('.ts') ? [path] : [];
  });
}

/**
 * Error codes in the source: every UPPER_SNAKE string literal with an underscore (outside the SQL dialect
 * layer, src/server/db, whose literals are SQL), plus any literal in a code position
 * (`HttpError(status, '…'`, `errorBody('…'`, `ClientError('…'`, `PipelineFailure('…'`, `code: '…'`).
 */
function codesInSource(): Set<string> {
  const codes = new Set<string>();
  for (const file of files('src')) {
    const text = readFileSync(file, 'utf8');
    const positional = /(?:HttpError\(\s*[^,()]+,\s*|errorBody\(\s*|(?:ClientError|PipelineFailure)\(\s*|\bcode:\s*)'([A-Za-z][\w.]*)'/g;
    for (const m of text.matchAll(positional)) codes.add(m[1]!);
    if (file.startsWith(join('src', 'server', 'db'))) continue;
    for (const m of text.matchAll(/'([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)'/g)) codes.add(m[1]!);
  }
  for (const name of Object.keys(INTERNAL)) codes.delete(name);
  return codes;
}

/** The codes listed in docs/errors.md: the first cell of each table row, in backquotes. */
function codesInDocs(): Set<string> {
  const text = readFileSync('docs/errors.md', 'utf8');
  return new Set([...text.matchAll(/^\| `([^`]+)` \|/gm)].map((m) => m[1]!));
}

describe('docs/errors.md', () => {
  it('lists every error code the library and the backend produce, and no other', () => {
    const source = codesInSource();
    const docs = codesInDocs();
    expect(source.size).toBeGreaterThan(60);
    expect([...source].filter((c) => !docs.has(c)).sort(), 'codes in src/ missing from docs/errors.md').toEqual([]);
    expect([...docs].filter((c) => !source.has(c)).sort(), 'codes in docs/errors.md that src/ never produces').toEqual([]);
  });
});
