/**
 * Partial-document `where` of log and analytics triggers (design §7), shared with analytics:
 * see src/core/partial-where.ts. `$where` and other code-running operators are refused.
 */
import { compileWhere, type Tester } from '../core/partial-where.js';

/** A predicate for a partial-document `where` (no `where`: matches everything). Throws WhereError on a bad one. */
export function partialMatcher(where: Record<string, unknown> | undefined): Tester {
  return compileWhere(where);
}
