// @vitest-environment node
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
// @ts-expect-error plain ESM script shared with `npm start`
import { buildWithProgress } from '../../scripts/build-progress.mjs';

/** `npm start` builds dist/ through scripts/build-progress.mjs: a line per bundle, and a heartbeat while one is slow. */
describe('npm start build progress', () => {
  const dir = mkdtempSync(join(tmpdir(), 'iar-build-progress-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(join(dir, 'src'));
  symlinkSync(resolve('node_modules'), join(dir, 'node_modules'));
  writeFileSync(join(dir, 'src/a.js'), 'export default function a() { return 1 }\n');
  writeFileSync(join(dir, 'src/b.js'), "import a from './a.js';\nconsole.log(a());\n");
  const config = join(dir, 'rollup.config.mjs');
  writeFileSync(
    config,
    `const slow = () => ({ name: 'slow', buildEnd: () => new Promise((r) => setTimeout(r, 400)) });
export default [
  { input: 'src/a.js', output: { file: 'dist/a.mjs', format: 'es' }, plugins: [slow()] },
  { input: 'src/b.js', output: [{ dir: 'dist', entryFileNames: 'b-[hash].mjs', format: 'es' }, { file: 'dist/b.cjs', format: 'cjs' }] },
];
`,
  );

  it('prints each bundle as it starts and ends, a heartbeat while one is slow, and the total', async () => {
    const lines: string[] = [];
    const cwd = process.cwd();
    process.chdir(dir);
    try {
      await buildWithProgress(config, { log: (line: string) => lines.push(line), heartbeatMs: 150 });
    } finally {
      process.chdir(cwd);
    }
    expect(lines[0]).toBe('[start] [1/2] src/a.js → dist/a.mjs …');
    expect(lines.some((l) => /^\[start\] {7}still building \(\d+ s; \d+ s in all\)$/.test(l))).toBe(true);
    expect(lines).toContain('[start] [2/2] src/b.js → dist/b-[hash].mjs, dist/b.cjs …');
    expect(lines.filter((l) => /^\[start\] {7}done in \d+ s$/.test(l))).toHaveLength(2);
    expect(lines.at(-1)).toMatch(/^\[start\] dist\/ built in \d+ s$/);
    expect(existsSync(join(dir, 'dist/a.mjs')) && existsSync(join(dir, 'dist/b.cjs'))).toBe(true);
  });

  it('names the bundle that failed', async () => {
    writeFileSync(join(dir, 'src/a.js'), 'export default function a( {\n');
    const cwd = process.cwd();
    process.chdir(dir);
    try {
      await expect(buildWithProgress(config, { log: () => undefined })).rejects.toThrow(/^src\/a\.js → dist\/a\.mjs: /);
    } finally {
      process.chdir(cwd);
    }
  });
});
