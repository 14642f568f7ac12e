/**
 * Partial-document `where` of log and analytics triggers (design §7), shared with analytics and
 * notifications: see src/filter/partial.ts. `$where` and other code-running operators are refused.
 */
import { compilePartialFilter, type Tester } from '../filter/partial.js';

/** A predicate for a partial-document `where` (no `where`: matches everything). Throws FilterError on a bad one. */
export function partialMatcher(where: Record<string, unknown> | undefined): Tester {
  return compilePartialFilter(where);
}
