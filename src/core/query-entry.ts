/**
 * The lazy `query` chunk of client.js (`query-<hash>.mjs`, see src/core/lazy.ts): the filter module
 * (src/filter/: sift with the allow-listed operations, RE2 for `$regex`), for analytics trigger `where`
 * matching (loaded when the actions list holds an analytics trigger with a `where`) and the `where` of
 * `getLogs` over device records. The npm build bundles it.
 */
export { compilePartialFilter } from '../filter/partial.js';
export { compileFilter } from '../filter/tester.js';
