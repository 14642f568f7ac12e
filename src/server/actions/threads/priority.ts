/**
 * Run threads yield the CPU to the HTTP thread: on Linux a thread has its own nice value, and each run thread
 * raises its own (`limits.runThreadNiceness`, default 10; `/proc/thread-self` names its thread id). Runs spinning
 * on every core then leave the API most of the CPU it needs; on an idle machine they still get all of it.
 * Elsewhere (or not permitted) nothing changes.
 */
import { readlinkSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';

/** Default niceness added to a run thread's (CFS weight about a tenth of the HTTP thread's). */
export const RUN_THREAD_NICENESS = 10;

export function lowerThreadPriority(by = RUN_THREAD_NICENESS): boolean {
  if (!(by > 0)) return false;
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (!Number.isInteger(tid) || tid <= 0) return false;
    setPriority(tid, Math.min(19, getPriority(tid) + by));
    return true;
  } catch {
    return false;
  }
}
