/** The query engine (where/$filters, order, pagination, attributes, aggregate, join), see ./query/. */
export { compileWhere, runQuery, validateQuery } from './query/index.js';
