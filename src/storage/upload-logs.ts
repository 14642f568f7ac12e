/**
 * The upload loop of device run logs, in the lazy `runs` chunk (src/storage/run-logs.ts `uploadRunLogs` calls it,
 * one at a time per client and app). Uploads pending logs in batches and removes each batch once accepted. A
 * failure that may pass later stops the upload, keeping the rest for the next time. The backend takes or refuses
 * a batch whole; when it refuses one for good, the records of that batch are sent one at a time: those it takes
 * are removed as uploaded, those it refuses are dropped with an error log, so one bad record never blocks the
 * ones after it. (Done on the device so that it works with any backend; the extra requests happen only after
 * such a refusal.)
 */
import type { ActionLog } from '../contract/actions.js';
import type { Logger } from '../core/logger.js';
import type { StoredRunLog } from './run-logs.js';

/** What the loop uses of client.js: the app's pending logs, their removal, and the backend's final refusals. */
export interface UploadHost {
  logger: Pick<Logger, 'info' | 'error'>;
  /** Pending logs, oldest first (at most `limit`). */
  pending(limit: number): Promise<StoredRunLog[]>;
  /** How many logs are stored as pending (counted, not read; records being written are not waited for). */
  count(): Promise<number>;
  remove(keys: readonly string[]): Promise<void>;
  /** An answer no retry can change (a 4xx other than 401/403/408/425/429). */
  refusedForGood(error: unknown): boolean;
}

const describe = (log: ActionLog) => `of action ${String(log.data?.actionId)} at ${log.createdAt} (${log.deviceKey})`;

export async function uploadLogs(
  host: UploadHost,
  upload: (logs: ActionLog[]) => Promise<void>,
  batchSize: number,
): Promise<{ uploaded: number; remaining: number }> {
  let uploaded = 0;
  const later = async (error: unknown) => {
    host.logger.info(`Device run logs will be uploaded later: ${(error as Error)?.message ?? error}`);
    // `pending` waits for the records being written (count alone does not); one record is read.
    await host.pending(1);
    return { uploaded, remaining: await host.count() };
  };
  const drop = async (record: StoredRunLog, error: unknown) => {
    host.logger.error(`Device run log ${describe(record.log)} was refused by the backend for good, dropping it: ${(error as Error)?.message ?? error}`);
    await host.remove([record.key]);
  };
  for (;;) {
    const batch = await host.pending(batchSize);
    if (batch.length === 0) return { uploaded, remaining: 0 };
    try {
      await upload(batch.map((b) => b.log));
    } catch (error) {
      if (!host.refusedForGood(error)) return later(error);
      if (batch.length === 1) {
        await drop(batch[0]!, error);
        continue;
      }
      // One by one, to find the record(s) refused.
      for (const record of batch) {
        try {
          await upload([record.log]);
        } catch (one) {
          if (!host.refusedForGood(one)) return later(one);
          await drop(record, one);
          continue;
        }
        await host.remove([record.key]);
        uploaded++;
      }
      continue;
    }
    await host.remove(batch.map((b) => b.key));
    uploaded += batch.length;
  }
}
