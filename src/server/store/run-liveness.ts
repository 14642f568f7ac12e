/**
 * Nothing a server run writes lands after its log record (issue 15). A run's host calls carry its liveness: the
 * `signal` aborted when the run ends (its time limit, its thread's crash, shutdown), and the run's queue row. A
 * call of an ended run does not start (`assertRunLive`), and every write checks the run last in its transaction
 * (`assertRunLiveIn`): on PostgreSQL it also locks the run's row `FOR SHARE`, so the run's end (`finishRun`
 * updating that row, in the transaction that writes its log) waits for the write to commit, or the write sees the
 * run ended and is rolled back. On SQLite transactions run one at a time, so the same read decides.
 */
import type { Queryable } from '../db/database.js';
import { HttpError } from '../http/errors.js';

export interface RunLiveness {
  signal?: AbortSignal;
  /** The run's queue row and the worker that claimed it (absent: the signal alone decides). */
  row?: { id: number; claimedBy: string };
}

const runEnded = () => new HttpError(409, 'RUN_ENDED', 'The run that made this call has ended; the write was not applied');

/** When a host call starts. */
export function assertRunLive(live: RunLiveness | undefined): void {
  if (live?.signal?.aborted) throw runEnded();
}

/** Last in a write's transaction: rolls the write back when its run has ended. */
export async function assertRunLiveIn(tx: Queryable, dialect: 'sqlite' | 'postgres', live: RunLiveness | undefined): Promise<void> {
  assertRunLive(live);
  if (!live?.row) return;
  const lock = dialect === 'postgres' ? ' FOR SHARE' : '';
  const row = await tx.get(`SELECT id FROM action_runs WHERE id = ? AND status = 'running' AND claimed_by = ?${lock}`, [live.row.id, live.row.claimedBy]);
  if (!row) throw runEnded();
}
