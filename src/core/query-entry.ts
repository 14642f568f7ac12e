/**
 * The lazy `query` chunk of client.js (`query-<hash>.mjs`, see src/core/lazy.ts): sift with the safe
 * operations, for analytics trigger `where` matching (loaded when the actions list holds an analytics trigger
 * with a `where`) and the `where` of `getLogs` over device records. The npm build bundles it.
 */
export { compileWhere } from './partial-where.js';
export { safeTester } from './safe-query.js';
