import { HttpError } from '../../http/errors.js';
import { spentInDatabase } from './filter-entries.js';

/**
 * The memory and time budget of one `aggregate` run (see docs/data-sources.md, "Aggregate budget").
 *
 * mingo evaluates a pipeline synchronously in this process, and its operators can build values far larger
 * than the request: `$let`/`$concatArrays` doubling an array 30 times is a 2 KB request that allocates 2^30
 * elements and ends the process with "JavaScript heap out of memory". A static check of the pipeline cannot
 * see sizes (they depend on the data, and the same growth is reachable through `$reduce`, `$map`, `$concat`,
 * `$replaceAll`, `$unwind`, stages re-using a field twice, …), so the budget is checked while it runs, on
 * what every operator and stage actually produced (aggregate.ts wraps each of them):
 *
 * - **memory**: every value an expression operator or accumulator returns and every document a stage other
 *   than `$match`/`$sort`/`$skip`/`$limit` emits is charged, in estimated bytes, against `limits.aggregateBytes`.
 *   Objects and arrays already charged are not charged again, so the total is what the run allocated (the
 *   entries it reads, once, plus what it builds), not how often it looked at them;
 * - **size of one value**: values shared by reference can describe a tree far larger than the memory they use
 *   (`[$$a, $$a]` nested 30 times), which mingo itself walks (`$project` prunes missing fields recursively,
 *   comparisons and hashing walk whole values) as would the JSON answer. Every operator and accumulator result,
 *   the arguments of operators that walk their inputs (comparisons, sets, `$in`, `$group` keys, `$addToSet`),
 *   every emitted document and the final result are measured as trees (size and depth), refused past the same
 *   limit and past `depth` levels;
 * - **time**: a deadline (`limits.aggregateTimeoutMs`) checked at every operator call and emitted document.
 *
 * A refusal is 422 `AGGREGATE_TOO_LARGE` or 422 `QUERY_TIMEOUT`; the process keeps its memory. Measuring
 * stops as soon as the limit is passed, so it never costs more than the budget it protects.
 */
export interface AggregateLimits {
  /** Estimated bytes (default limits.aggregateBytes, 64 MB). */
  bytes: number;
  /** Milliseconds (default limits.aggregateTimeoutMs, 5 s). */
  timeoutMs: number;
  /** Deepest nesting of any value it builds (default limits.bodyDepth, 256): serialising a deeper one would recurse. */
  depth?: number;
  /**
   * When the aggregate ends a query that already spent part of its time (its `where`, a scan, a translation the
   * database gave up): the time (`Date.now()`) the whole query must end by. The budget then ends there, not
   * `timeoutMs` after the aggregate starts, so one request never costs more than one `limits.aggregateTimeoutMs`.
   */
  deadline?: number;
  /** Entries the pipeline may take in (limits.queryRows; past it 422 QUERY_TOO_LARGE): none when undefined. */
  rows?: number;
  /** Of that query's time, what the database's attempt spent before the JS evaluator took it (named in the 422). */
  databaseMs?: number;
}

const tooLarge = (limit: number, what: string) =>
  new HttpError(422, 'AGGREGATE_TOO_LARGE', `aggregate: ${what} went over the aggregate budget of ${limit} bytes (limits.aggregateBytes)`, { limit });

/** Estimated bytes of one node (not its children). */
function ownSize(value: unknown): number {
  switch (typeof value) {
    case 'string':
      return 16 + value.length;
    case 'object':
      if (value === null) return 8;
      if (Array.isArray(value)) return 16 + 8 * value.length;
      return 32;
    default:
      return 8;
  }
}

export class AggregateBudget {
  private used = 0;
  private ticks = 0;
  private readonly deadline: number;
  /** Objects already charged: charged once. */
  private readonly charged = new WeakSet<object>();

  constructor(readonly limits: AggregateLimits) {
    this.deadline = limits.deadline ?? Date.now() + limits.timeoutMs;
  }

  /** Time check: every 64 calls (Date.now is cheap, but not free). */
  tick(): void {
    if ((++this.ticks & 63) === 0 && Date.now() > this.deadline) {
      const { timeoutMs, databaseMs } = this.limits;
      const message = `aggregate: took longer than ${timeoutMs} ms (limits.aggregateTimeoutMs)${spentInDatabase(databaseMs, timeoutMs)}`;
      throw new HttpError(422, 'QUERY_TIMEOUT', message, { limit: timeoutMs });
    }
  }

  /** Charges the memory `value` adds (objects not seen before), against the run's total. Returns `value`. */
  charge<T>(value: T, what: string): T {
    if (typeof value !== 'object' || value === null) {
      if (typeof value === 'string' && value.length > 64) this.add(ownSize(value), what);
      return value;
    }
    if (this.charged.has(value)) return value;
    const stack: object[] = [value];
    this.charged.add(value);
    while (stack.length > 0) {
      const node = stack.pop()!;
      let size = ownSize(node);
      if (Array.isArray(node)) {
        for (let i = 0; i < node.length; i++) size += this.childOf(node[i], stack);
      } else if (!(node instanceof Date || node instanceof RegExp)) {
        for (const key of Object.keys(node)) size += key.length + 8 + this.childOf((node as Record<string, unknown>)[key], stack);
      }
      this.add(size, what);
    }
    return value;
  }

  private childOf(child: unknown, stack: object[]): number {
    if (typeof child === 'object' && child !== null) {
      if (!this.charged.has(child)) {
        this.charged.add(child);
        stack.push(child);
      }
      return 0;
    }
    return typeof child === 'string' ? child.length : 0;
  }

  /** Refuses, before it is built, a value of about `bytes` that would take the run past its limit. */
  ensureRoom(bytes: number, what: string): void {
    if (this.used + bytes > this.limits.bytes) throw tooLarge(this.limits.bytes, `the values it builds (${what})`);
  }

  private add(bytes: number, what: string): void {
    this.used += bytes;
    if (this.used > this.limits.bytes) throw tooLarge(this.limits.bytes, `the values it builds (${what})`);
  }

  /**
   * Refuses a value whose size as a tree (what comparing, hashing or serialising it walks: shared parts count
   * every time they appear) is over the limit. Stops walking as soon as it is. Returns `value`.
   */
  checkTree<T>(value: T, what: string): T {
    if (typeof value !== 'object' || value === null) return value;
    const limit = this.limits.bytes;
    const maxDepth = this.limits.depth ?? 256;
    let total = 0;
    const stack: unknown[] = [value];
    const depths: number[] = [1];
    while (stack.length > 0) {
      const node = stack.pop();
      const depth = depths.pop()!;
      total += ownSize(node);
      if (total > limit) throw tooLarge(limit, what);
      if (typeof node !== 'object' || node === null || node instanceof Date || node instanceof RegExp) continue;
      if (depth > maxDepth) {
        throw new HttpError(422, 'AGGREGATE_TOO_LARGE', `aggregate: ${what} is nested deeper than ${maxDepth} levels (limits.bodyDepth)`, { limit: maxDepth });
      }
      if (Array.isArray(node)) {
        for (let i = 0; i < node.length; i++) {
          const child = node[i];
          // Scalars are sized here, not pushed: an array of millions of numbers is walked once.
          if (typeof child !== 'object' || child === null) {
            total += ownSize(child);
            continue;
          }
          stack.push(child);
          depths.push(depth + 1);
        }
        if (total > limit) throw tooLarge(limit, what);
      } else {
        for (const key of Object.keys(node)) {
          total += key.length;
          stack.push((node as Record<string, unknown>)[key]);
          depths.push(depth + 1);
        }
      }
    }
    return value;
  }
}

/** The budget of the aggregate running now (mingo runs synchronously, so one at a time), or null. */
let active: AggregateBudget | null = null;

export function activeBudget(): AggregateBudget | null {
  return active;
}

/** Runs `fn` (synchronous) under `budget`. */
export function withBudget<T>(budget: AggregateBudget, fn: () => T): T {
  const previous = active;
  active = budget;
  try {
    return fn();
  } finally {
    active = previous;
  }
}
