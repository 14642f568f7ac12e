import type { Queryable } from '../../db/database.js';

/** Data-access layer of `data_source_commit_receipts` (commits sent with an Idempotency-Key). */

export interface CommitReceipt {
  requestHash: string;
  /** What the first commit reported besides the data set: `{ clientIds?, errors? }`. */
  answer: Record<string, unknown>;
}

export interface ReceiptKey {
  dataSourceId: number;
  /** The caller's token id, 0 without a token. */
  tokenId: number;
  key: string;
}

export async function findCommitReceipt(db: Queryable, k: ReceiptKey): Promise<CommitReceipt | undefined> {
  const row = await db.get<{ request_hash: string; answer: string }>(
    'SELECT request_hash, answer FROM data_source_commit_receipts WHERE data_source_id = ? AND token_id = ? AND idempotency_key = ?',
    [k.dataSourceId, k.tokenId, k.key],
  );
  return row && { requestHash: row.request_hash, answer: JSON.parse(row.answer) as Record<string, unknown> };
}

export async function insertCommitReceipt(db: Queryable, k: ReceiptKey, receipt: CommitReceipt, now: string): Promise<void> {
  await db.run(
    'INSERT INTO data_source_commit_receipts (data_source_id, token_id, idempotency_key, request_hash, answer, created_at) VALUES (?, ?, ?, ?, ?, ?)',
    [k.dataSourceId, k.tokenId, k.key, receipt.requestHash, JSON.stringify(receipt.answer), now],
  );
}

/** Forgets the receipts written before `before` (ISO): a commit re-sent after that is applied again. */
export async function pruneCommitReceipts(db: Queryable, before: string): Promise<number> {
  return (await db.run('DELETE FROM data_source_commit_receipts WHERE created_at < ?', [before])).changes;
}
