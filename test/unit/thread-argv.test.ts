import { describe, expect, it } from 'vitest';
import { threadExecArgv } from '../../src/pipeline/thread-argv.js';

describe('threadExecArgv', () => {
  it('keeps the process options but --input-type and the -e/-p script', () => {
    expect(threadExecArgv(['--input-type=module', '-e', 'code()'])).toEqual([]);
    expect(threadExecArgv(['--enable-source-maps', '--input-type', 'module', '--eval=code()', '-p', '1', '--conditions=dev'])).toEqual([
      '--enable-source-maps',
      '--conditions=dev',
    ]);
    expect(threadExecArgv([])).toEqual([]);
  });
});
