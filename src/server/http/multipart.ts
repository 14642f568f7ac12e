import type { Context } from 'hono';
import { setOwn } from '../data-sources/query/values.js';
import { HttpError } from './errors.js';

/** A file part of a multipart body. */
export interface UploadedFile {
  /** The part's name (e.g. the entry field, or `files[0]`). */
  field: string;
  name: string;
  type: string;
  bytes: Uint8Array;
}

export const isMultipart = (c: Context) => (c.req.header('Content-Type') ?? '').toLowerCase().startsWith('multipart/form-data');

/**
 * Reads a multipart body: plain parts become fields (a repeated name becomes an array), file parts uploads.
 * A body that is not valid multipart is a 400 (the body size is bounded by `limits.bodyBytes` before this).
 */
export async function readMultipart(c: Context): Promise<{ fields: Record<string, unknown>; files: UploadedFile[] }> {
  let form: FormData;
  try {
    form = await c.req.formData();
  } catch (error) {
    throw new HttpError(400, 'INVALID_BODY', `The multipart body could not be read: ${(error as Error).message}`);
  }
  const fields: Record<string, unknown> = {};
  const files: UploadedFile[] = [];
  for (const [name, value] of form.entries()) {
    if (typeof value === 'string') {
      // Own keys only: a part named `constructor` or `__proto__` is an ordinary column.
      const previous = Object.hasOwn(fields, name) ? fields[name] : undefined;
      setOwn(fields, name, previous === undefined ? value : Array.isArray(previous) ? [...previous, value] : [previous, value]);
    } else {
      files.push({ field: name, name: value.name || name, type: value.type, bytes: new Uint8Array(await value.arrayBuffer()) });
    }
  }
  return { fields, files };
}
