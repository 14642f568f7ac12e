import { invalidQuery } from './errors.js';

/** Longest `$regex` source accepted. */
export const MAX_REGEX_LENGTH = 256;
const ALLOWED_FLAGS = /^[imsu]*$/;
/** A quantified group that itself contains a quantifier, e.g. `(a+)+`: the classic catastrophic backtracking shape. */
const NESTED_QUANTIFIER = /\((?:[^()\\]|\\.)*(?:[+*]|\{\d+,?\d*\})(?:[^()\\]|\\.)*\)\s*(?:[+*]|\{\d+,?\d*\})/;

/**
 * Checks a user regular expression before it is compiled: a string of at most MAX_REGEX_LENGTH characters,
 * flags among `imsu`, no nested quantifiers, and valid syntax. Returns the compiled RegExp.
 */
export function guardRegex(pattern: unknown, flags: unknown, field: string): RegExp {
  if (typeof pattern !== 'string') throw invalidQuery(`${field} must be a string`);
  if (pattern.length > MAX_REGEX_LENGTH) throw invalidQuery(`${field} is longer than ${MAX_REGEX_LENGTH} characters`);
  if (flags !== undefined && (typeof flags !== 'string' || !ALLOWED_FLAGS.test(flags))) {
    throw invalidQuery(`${field}: $options must only hold the flags i, m, s, u`);
  }
  if (NESTED_QUANTIFIER.test(pattern)) throw invalidQuery(`${field}: nested quantifiers such as (a+)+ are not allowed`);
  try {
    return new RegExp(pattern, flags as string | undefined);
  } catch (error) {
    throw invalidQuery(`${field} is not a valid regular expression: ${(error as Error).message}`);
  }
}
