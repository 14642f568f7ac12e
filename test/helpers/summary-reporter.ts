import type { Reporter, TestModule } from 'vitest/node';

const firstLine = (value: unknown) =>
  String((value as { message?: unknown })?.message ?? value)
    .split('\n')[0]!
    .slice(0, 200);

/**
 * Prints the plain closing lines CI reads: each failure in one line (a failed test, a file that failed outside its
 * tests, an unhandled error; at most 20), then `tests: N passed, N failed, N skipped`. Vitest's own report of a
 * failure can be far up a long log; these lines are the last ones.
 */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<unknown>): void {
    let passed = 0;
    let failed = unhandledErrors.length;
    let skipped = 0;
    const lines: string[] = unhandledErrors.map((error) => `unhandled error: ${firstLine(error)}`);
    for (const module of testModules) {
      const where = `[${module.project.name || 'default'}] ${module.moduleId.replace(`${process.cwd()}/`, '')}`;
      let failedHere = 0;
      for (const test of module.children.allTests()) {
        const result = test.result();
        if (result.state === 'passed') passed++;
        else if (result.state === 'failed') {
          failedHere++;
          lines.push(`failed: ${where} > ${test.fullName}: ${firstLine(result.errors?.[0])}`);
        } else skipped++;
      }
      // A file that failed outside its tests (import error, failing beforeAll) counts as one failure.
      if (module.state() === 'failed' && failedHere === 0) {
        failedHere = 1;
        lines.push(`failed: ${where}: ${firstLine(module.errors()[0])}`);
      }
      failed += failedHere;
    }
    const shown = lines.slice(0, 20);
    if (lines.length > shown.length) shown.push(`… and ${lines.length - shown.length} more`);
    process.stdout.write(`\n${shown.map((line) => `${line}\n`).join('')}tests: ${passed} passed, ${failed} failed, ${skipped} skipped\n`);
  }
}
