/**
 * The Node options a worker thread inherits: the process's own (`process.execArgv`, e.g. --enable-source-maps,
 * --conditions), less those a thread started from a file refuses or must not repeat: `--input-type` (a
 * `node --input-type=module -e …` script would fail every thread with ERR_WORKER_INVALID_EXEC_ARGV) and the
 * process's own script given by `-e`/`--eval`/`-p`/`--print`.
 */
const WITH_VALUE = new Set(['-e', '--eval', '-p', '--print', '--input-type']);

export function threadExecArgv(execArgv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < execArgv.length; i++) {
    const arg = execArgv[i]!;
    if (WITH_VALUE.has(arg)) {
      i++;
      continue;
    }
    if (/^--(input-type|eval|print)=/.test(arg)) continue;
    out.push(arg);
  }
  return out;
}
