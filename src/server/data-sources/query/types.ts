/** Shapes shared by the query engine and its callers (routes, client find, version reads). */
import type { Budget } from './filter-entries.js';
import type { OrderKey } from './order.js';

/** One stored entry as the engine sees it (`data` already parsed). */
export interface EntryRecord {
  id: number;
  dataSourceId: number;
  data: Record<string, unknown>;
  order: number;
  createdAt: string;
  updatedAt: string;
  deletedAt?: string | null;
}

export type Direction = 'ASC' | 'DESC';

/** `join.<Name>` of a query body. */
export interface JoinSpec {
  dataSourceId?: number;
  dataSourceName?: string;
  /** `{ '<parent column>': '<joined column>' }`; without it the joined entries are appended to the result. */
  on?: Record<string, string>;
  /** Drop parents without any match. */
  required?: boolean;
  /** `joins.<Name>` becomes a boolean. */
  has?: boolean;
  /** `joins.<Name>` becomes the number of matches. */
  count?: boolean;
  /** `joins.<Name>` becomes the sum of this column over the matches. */
  sum?: string;
  where?: object;
  attributes?: string[];
  /** Maximum joined entries per parent (0 = all). */
  limit?: number;
  order?: [string, Direction];
}

export interface QueryBody {
  type: 'select' | 'delete';
  where?: object;
  aggregate?: object[];
  join?: Record<string, JoinSpec>;
  attributes?: string[];
  order?: [string, Direction][];
  limit?: number;
  offset?: number;
  includePagination?: boolean;
  /** Leave out rows equal to an earlier row of the answer (compared after attributes and joins). */
  distinct?: boolean;
}

/** Reference to another data source of a join. */
export interface JoinRef {
  dataSourceId?: number;
  dataSourceName?: string;
}

/** Loads the entries of a joined data source (the caller checks access and answers 404). */
export interface JoinLoader {
  /**
   * The joined data source's entries the caller may see: every one, or at least every one the join's `where`
   * matches, when given (the loader may leave the others out; the caller matches `where.test` on what it gets).
   * `where.source` is the checked `where` with `data.` prefixes removed, `where.field` its name in the body
   * (`join.<Name>.where`). Reads and matching are under the query's `budget` (filter-entries.ts).
   */
  load(ref: JoinRef, where?: JoinWhere, budget?: Budget): Promise<readonly EntryRecord[]>;
}

/** A join's `where`, as given to its loader. */
export interface JoinWhere {
  source: unknown;
  test: (entry: EntryRecord) => boolean;
  field: string;
  /** A join without `on` that appends at most `count` entries: only its first `count` matches in `order` are needed. */
  best?: { order: OrderKey[]; count: number };
}

export interface Pagination {
  total: number;
  limit: number;
  offset: number;
}

export interface QueryResult {
  entries: unknown[];
  pagination?: Pagination;
}
