import { createHash } from 'node:crypto';
import type { Context } from 'hono';

/**
 * A JSON answer with a strong `ETag` (a SHA-256 of the exact body, so every instance of the backend gives the
 * same tag for the same list), and `304 Not Modified` without a body when the request's `If-None-Match` holds
 * that tag (or `*`). Tags are compared weakly, as RFC 9110 §13.1.2 asks for `If-None-Match`: a `W/` prefix is
 * ignored. A malformed header matches nothing (a plain 200). `Cache-Control: private, no-cache` keeps shared
 * caches from storing an answer that depends on the token, and makes browsers revalidate theirs.
 */
export function jsonWithETag(c: Context, body: unknown): Response {
  const text = JSON.stringify(body);
  const tag = `"${createHash('sha256').update(text).digest('base64url')}"`;
  c.header('ETag', tag);
  c.header('Cache-Control', 'private, no-cache');
  if (ifNoneMatch(c.req.header('If-None-Match'), tag)) return c.body(null, 304);
  c.header('Content-Type', 'application/json');
  return c.body(text, 200);
}

/** Whether an `If-None-Match` header value matches `tag` (weak comparison). */
export function ifNoneMatch(header: string | undefined, tag: string): boolean {
  if (!header) return false;
  if (header.trim() === '*') return true;
  return header.split(',').some((candidate) => candidate.trim().replace(/^W\//, '') === tag);
}
