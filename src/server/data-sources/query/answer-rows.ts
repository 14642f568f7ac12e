import { HttpError } from '../../http/errors.js';

/**
 * The bound on what one select holds (limits.queryRows): the entries of its answer, or those an aggregate run by
 * the JS evaluator takes in. A select without `limit` matched every entry into one answer, so its memory grew with
 * the data set (a 300,000-entry answer is ~73 MB of JSON and several times that as parsed entries).
 */

/** Whether a select's answer (or an aggregate's input) may hold more than `cap` entries: no limit, or a larger one. */
export const mayExceed = (limit: number | undefined, cap: number): boolean => !(limit !== undefined && limit > 0 && limit <= cap);

/** 422 QUERY_TOO_LARGE: `what` (`select`, `aggregate`) would hold more than `cap` entries. */
export const tooManyRows = (cap: number, what: 'select' | 'aggregate' = 'select') =>
  new HttpError(
    422,
    'QUERY_TOO_LARGE',
    `${what}: more than ${cap} entries match (limits.queryRows); ${
      what === 'select'
        ? 'read them in pages with limit and offset, or every entry with GET …/data (streamed)'
        : "narrow the body's where (it chooses the pipeline's input; a $match stage does not)"
    }`,
    { limit: cap },
  );
