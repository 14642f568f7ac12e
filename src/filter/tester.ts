/**
 * Compiles a filter (a sift, i.e. MongoDB-style, query) into a tester, for every where-like input of the
 * library: data source `where`, getLogs `where`, notification `where`/`scope`, and trigger `where` on the
 * server and the device. The operations are sift's own minus anything that runs code, with `$regex` on RE2
 * (regex.ts) and `$like`/`$iLike` without any regex engine (like.ts), so one input gets one answer on every
 * path and no pattern can make matching super-linear.
 */
import { FilterError, isPlainObject } from './errors.js';
import { likeMatcher } from './like.js';
import { checkFilter } from './operators.js';
import { compileRegex } from './regex.js';
import { sift } from './sift.js';

export type Tester = (doc: unknown) => boolean;

/** sift's operation-creator signature. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type OperationCreator = (params: any, ownerQuery: any, options: any, name: string) => any;

const $regex: OperationCreator = (params, ownerQuery, options) => {
  const regex = compileRegex(params, isPlainObject(ownerQuery) ? ownerQuery.$options : undefined, '$regex');
  return sift.createEqualsOperation((value: unknown) => typeof value === 'string' && regex.test(value), ownerQuery, options);
};

const likeOperation =
  (caseInsensitive: boolean): OperationCreator =>
  (params, ownerQuery, options) =>
    sift.createEqualsOperation(likeMatcher(String(params), caseInsensitive), ownerQuery, options);

/** The operations handed to sift: its own, minus `$where`, with linear-time pattern operators. */
const OPERATIONS: Record<string, OperationCreator> = {
  $eq: sift.$eq,
  $ne: sift.$ne,
  $gt: sift.$gt,
  $gte: sift.$gte,
  $lt: sift.$lt,
  $lte: sift.$lte,
  $in: sift.$in,
  $nin: sift.$nin,
  $exists: sift.$exists,
  $regex,
  $options: sift.$options as OperationCreator,
  $and: sift.$and,
  $or: sift.$or,
  $nor: sift.$nor,
  $not: sift.$not,
  $mod: sift.$mod as OperationCreator,
  $all: sift.$all,
  $size: sift.$size,
  $type: sift.$type as OperationCreator,
  $elemMatch: sift.$elemMatch,
  $like: likeOperation(false),
  $iLike: likeOperation(true),
};

/** Checks `query` (FilterError naming `path` on a bad one) and compiles it into a tester. */
export function compileFilter(query: Record<string, unknown>, path = 'where'): Tester {
  if (!isPlainObject(query)) throw new FilterError(`${path} must be an object`);
  checkFilter(query, path);
  try {
    return sift.createQueryTester(query, { operations: OPERATIONS }) as Tester;
  } catch (error) {
    throw new FilterError(`${path}: ${(error as Error).message}`);
  }
}
