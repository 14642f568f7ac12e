/**
 * The one way this library turns a caller's sift query into a tester, on the device and on the server.
 *
 * sift's default export accepts `$where`, which compiles a string with `new Function` in the host realm:
 * a query from a request body or an action definition would run code in the backend or the page. Every
 * query here goes through `createQueryTester` with an explicit set of operations instead, so `$where`
 * (and any operator not listed) is refused as unsupported.
 */
import * as siftNamespace from 'sift';

type Sift = typeof siftNamespace;
// sift's CommonJS build under Node ESM exposes its named exports only on `default`; bundlers expose them directly.
const candidate = siftNamespace as unknown as Sift & { default?: Sift };
const sift: Sift = typeof candidate.createQueryTester === 'function' ? candidate : (candidate.default as Sift);

/** Every read-only sift operation; `$where` is deliberately absent. */
export const SAFE_OPERATIONS = Object.freeze({
  $eq: sift.$eq,
  $ne: sift.$ne,
  $gt: sift.$gt,
  $gte: sift.$gte,
  $lt: sift.$lt,
  $lte: sift.$lte,
  $in: sift.$in,
  $nin: sift.$nin,
  $exists: sift.$exists,
  $regex: sift.$regex,
  $options: sift.$options,
  $and: sift.$and,
  $or: sift.$or,
  $nor: sift.$nor,
  $not: sift.$not,
  $mod: sift.$mod,
  $all: sift.$all,
  $size: sift.$size,
  $type: sift.$type,
  $elemMatch: sift.$elemMatch,
});

export type Tester = (doc: unknown) => boolean;

export class QueryError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'QueryError';
  }
}

/** Refuses `$where` anywhere (named, with its path), and logical operators without a list, before sift sees the query. */
function refuseCode(value: unknown, path: string): void {
  if (Array.isArray(value)) value.forEach((v, i) => refuseCode(v, `${path}[${i}]`));
  else if (typeof value === 'object' && value !== null)
    for (const [key, v] of Object.entries(value)) {
      if (key === '$where' || key === '$function' || key === '$accumulator')
        throw new QueryError(`${path}: ${key} is not allowed (it would run code)`);
      if ((key === '$and' || key === '$or' || key === '$nor') && !Array.isArray(v))
        throw new QueryError(`${path}.${key}: must be an array of queries`);
      refuseCode(v, `${path}.${key}`);
    }
}

/** A tester for a sift query with the safe operations only. Throws QueryError naming `path` on a bad query. */
export function safeTester(query: Record<string, unknown>, path = 'where'): Tester {
  refuseCode(query, path);
  try {
    const test = sift.createQueryTester(query, { operations: SAFE_OPERATIONS }) as Tester;
    return test;
  } catch (error) {
    throw new QueryError(`${path}: ${(error as Error).message}`);
  }
}
