/** Data source query engine: sift `where` + `$filters`, order, pagination, attributes, mingo aggregate, joins. */
export type { Direction, EntryRecord, JoinLoader, JoinRef, JoinSpec, Pagination, QueryBody, QueryResult } from './types.js';
export { validateQuery, compileQuery, type CompiledQuery } from './compile.js';
export { compileWhere, WHERE_OPERATORS } from './where.js';
export { compileFilters, FILTER_CONDITIONS } from './filters.js';
export { compileOrder, sortEntries, DEFAULT_ORDER, type OrderKey } from './order.js';
export { compileAttributes } from './attributes.js';
export { runAggregate, checkPipeline, convertToNumber, AGGREGATE_STAGES, AGGREGATE_ACCUMULATORS } from './aggregate.js';
export { runQuery, matchingIds } from './run.js';
export { MAX_PATTERN_LENGTH as MAX_REGEX_LENGTH } from '../../../filter/regex.js';
