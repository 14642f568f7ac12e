/**
 * The refusal of a filter (a `where`, `scope` or trigger condition): `code` is always `INVALID_QUERY`, and the
 * message names the path of the bad part, e.g. `where.name.$regex`. The server answers it as a 400; the
 * client throws it as is.
 */
export class FilterError extends Error {
  readonly code = 'INVALID_QUERY';
  constructor(message: string) {
    super(message);
    this.name = 'FilterError';
  }
}

export const isPlainObject = (value: unknown): value is Record<string, unknown> => {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
};
