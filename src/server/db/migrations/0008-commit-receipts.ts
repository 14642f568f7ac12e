import type { Migration } from '../migrate.js';

/**
 * Receipts of commits sent with an `Idempotency-Key` (docs/data-sources.md, "Commits that converge"): a re-sent
 * commit with the same key, by the same token, to the same data source, is answered again instead of applied
 * twice. `token_id` 0 stands for requests without a token. `answer` is what the first commit reported besides the
 * data set (clientIds, per-item errors), as JSON; receipts are forgotten after a day.
 */
export const commitReceiptMigrations: Migration[] = [
  {
    id: '0008_data_source_commit_receipts',
    up: [
      `CREATE TABLE data_source_commit_receipts (
        data_source_id INTEGER NOT NULL REFERENCES data_sources(id) ON DELETE CASCADE,
        token_id INTEGER NOT NULL,
        idempotency_key TEXT NOT NULL,
        request_hash TEXT NOT NULL,
        answer TEXT NOT NULL,
        created_at TEXT NOT NULL,
        PRIMARY KEY (data_source_id, token_id, idempotency_key)
      )`,
      `CREATE INDEX data_source_commit_receipts_created ON data_source_commit_receipts (created_at)`,
    ],
  },
];
