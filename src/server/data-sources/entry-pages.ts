import type { KeptRows, Transaction } from '../db/database.js';
import { filterColumns, hasColumnFilter, type Grant } from './access.js';
import { keepEntryRows, keepEntryText, type EntryTuple } from './store/entries.js';
import type { EntryView } from './types.js';

/**
 * A data set answered as JSON text in pages, never as one string nor as an array of entries (docs/data-sources.md,
 * "Streamed answers"): each page is the JSON of a few thousand entries, as `toView` shapes them and
 * `JSON.stringify` writes them, the stored `data` text copied as it is (it was written by `JSON.stringify`) unless
 * the grant hides columns.
 */
export interface EntryPages {
  /**
   * The next page: entries' JSON separated by commas (a leading comma after the first page), as text or as its UTF-8
   * bytes; undefined at the end.
   */
  next(): Promise<string | Uint8Array | undefined>;
  /** Frees the rows the database keeps (idempotent). */
  close(): Promise<void>;
}

/** Entries per page: about 0.5 MB of text for entries of a few columns. */
export const ENTRY_PAGE_ROWS = 2_000;

/** One entry as `JSON.stringify(toView(entry))` writes it (a commit), or without `deletedAt` as a select does. */
function entryJson(dataSourceId: number, row: EntryTuple, grant: Grant, filtered: boolean, deletedAt: boolean): string {
  const [id, stored, order, createdAt, updatedAt] = row;
  const data = filtered ? JSON.stringify(filterColumns(JSON.parse(stored) as Record<string, unknown>, grant)) : stored;
  const json = `{"id":${id},"dataSourceId":${dataSourceId},"data":${data},"order":${order},"createdAt":${JSON.stringify(createdAt)},"updatedAt":${JSON.stringify(updatedAt)}`;
  return deletedAt ? `${json},"deletedAt":null}` : `${json}}`;
}

/**
 * Every entry of a data source in the default order, kept by the database in the transaction `tx` as they are now,
 * as pages shaped as a commit (`deletedAt`) or a select answers them. Without a column filter the database renders
 * the entries' JSON and builds the pages (store/entries.ts `keepEntryText`); with one, each entry's data is parsed
 * and filtered here.
 */
export async function keepEntryPages(
  tx: Transaction,
  dialect: 'sqlite' | 'postgres',
  dataSourceId: number,
  grant: Grant,
  options: { shape: 'commit' | 'select'; pageRows?: number },
): Promise<EntryPages> {
  if (hasColumnFilter(grant)) return entryPages(await keepEntryRows(tx, dataSourceId), dataSourceId, grant, options);
  const text = await keepEntryText(tx, dialect, dataSourceId, options.shape === 'commit');
  const pageRows = options.pageRows ?? ENTRY_PAGE_ROWS;
  return { next: () => text.next(pageRows), close: () => text.close() };
}

export function entryPages(
  rows: KeptRows<EntryTuple>,
  dataSourceId: number,
  grant: Grant,
  options: { shape: 'commit' | 'select'; pageRows?: number },
): EntryPages {
  const pageRows = options.pageRows ?? ENTRY_PAGE_ROWS;
  const deletedAt = options.shape === 'commit';
  const filtered = hasColumnFilter(grant);
  let first = true;
  return {
    async next() {
      const page = await rows.next(pageRows);
      if (page.length === 0) return undefined;
      let text = first ? '' : ',';
      first = false;
      for (let i = 0; i < page.length; i++) text += (i === 0 ? '' : ',') + entryJson(dataSourceId, page[i]!, grant, filtered, deletedAt);
      return text;
    },
    close: () => rows.close(),
  };
}

/**
 * The entries of `rows` that `test` accepts (after the grant hides its columns, so they cannot be probed), at
 * most `limit` of them (0: all), shaped as a commit answers them: for a filter the SQL translation leaves to the
 * JS evaluator, run page by page.
 */
export function filteredEntryPages(
  rows: KeptRows<EntryTuple>,
  dataSourceId: number,
  grant: Grant,
  test: (entry: EntryView) => boolean,
  limit: number,
  pageRows = ENTRY_PAGE_ROWS,
): EntryPages {
  const filtered = hasColumnFilter(grant);
  let sent = 0;
  return {
    async next() {
      while (limit === 0 || sent < limit) {
        const page = await rows.next(pageRows);
        if (page.length === 0) return undefined;
        let text = '';
        for (const [id, stored, order, createdAt, updatedAt] of page) {
          const parsed = JSON.parse(stored) as Record<string, unknown>;
          const data = filtered ? filterColumns(parsed, grant) : parsed;
          if (!test({ id, dataSourceId, data, order, createdAt, updatedAt, deletedAt: null })) continue;
          text += `${sent === 0 ? '' : ','}${JSON.stringify({ id, dataSourceId, data, order, createdAt, updatedAt, deletedAt: null })}`;
          if (++sent === limit) break;
        }
        if (text !== '') return text;
      }
      await rows.close();
      return undefined;
    },
    close: () => rows.close(),
  };
}
