/**
 * Redaction of trace values on the host (docs/pipeline.md "Trace"), after they leave the sandbox: whatever the
 * guest did (user code can patch the guest's built-ins), a traced value reaches a log record with
 *
 * - the values of secret-looking keys (src/pipeline/trace-values.ts `SECRET_WORDS`) replaced by `"[redacted]"`;
 * - in every string: URL query parameters with a secret-looking name (or `key`, `sig`, `signature`, `code`,
 *   `auth`), a URL's password (`//user:pass@`) and `Bearer …` / `Basic …` credentials replaced by `[redacted]`.
 *
 * Patterns are ours and linear; values are at most `limits.traceValueBytes` long and 32 deep (decodeValue).
 */
import { mentionsSecret, REDACTED } from './trace-values.js';
import type { TruncatedValue } from '../contract/pipeline.js';

/** Query parameter names that are secrets by themselves, beyond the secret-looking words. */
const SECRET_PARAMS = new Set(['sig', 'code', 'auth', 'pass']);
const PARAM = /([?&#;])([^=&#;\s"'<>]{1,100})=([^&#;\s"'<>]*)/g;
/** `//user:password@` (the password redacted) or `//token@` (a token used as the user name: all of it). */
const USERINFO = /(\/\/)([^/?#@\s:"']{1,200})(:[^/?#@\s"']{0,200})?@/g;
/** A credential after an authorization scheme: token characters with a digit or a symbol (not "Basic information"). */
const SCHEME = /\b(Bearer|Basic|Token|bearer|token)\s+(?=[A-Za-z]*[\d._~+/=-])[\w.~+/=-]{8,}/g;

/** A parameter name that is a secret: the secret words, the names above, and names ending in key or signature (`X-Amz-Signature`, `subscription-key`). */
const secretParam = (name: string) => {
  const lower = name.toLowerCase();
  return SECRET_PARAMS.has(lower) || mentionsSecret(lower) || /(key|signature)$/.test(lower);
};

/** A string with the credentials it carries replaced (URL parameters, userinfo, authorization schemes). */
export function redactString(text: string): string {
  if (text.length < 8) return text;
  let out = text;
  if (out.includes('=')) out = out.replace(PARAM, (whole, sep: string, name: string) => (secretParam(name) ? `${sep}${name}=${REDACTED}` : whole));
  if (out.includes('@'))
    out = out.replace(USERINFO, (_, slashes: string, user: string, password?: string) => `${slashes}${password ? `${user}:${REDACTED}` : REDACTED}@`);
  if (/bearer|basic|token/i.test(out)) out = out.replace(SCHEME, `$1 ${REDACTED}`);
  return out;
}

/** A JSON value with secret-looking keys' values and credentials in strings redacted (a copy where changed). */
export function redactValue(value: unknown): unknown {
  if (typeof value === 'string') return redactString(value);
  if (Array.isArray(value)) return value.map(redactValue);
  if (typeof value !== 'object' || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) out[key] = mentionsSecret(key) ? REDACTED : redactValue(v);
  return out;
}

/** A JSON string literal, or a scalar, after `"key":` in a JSON text (a preview may end inside it). */
const MEMBER = /"((?:[^"\\]|\\.)*)"\s*:\s*("(?:[^"\\]|\\.)*(?:"|$)|[{[]|[^,}\]\s]*)/g;

/**
 * The preview of a truncated value (the first characters of its JSON text): the scalar values of secret-looking
 * keys redacted, the text cut before an object or array under such a key, credentials in strings redacted.
 */
export function redactPreview(text: string): string {
  let cutAt = -1;
  const out = text.replace(MEMBER, (whole, key: string, value: string, offset: number) => {
    if (cutAt >= 0 || !mentionsSecret(key)) return whole;
    if (value === '{' || value === '[') {
      cutAt = offset;
      return whole;
    }
    return `"${key}":${JSON.stringify(REDACTED)}`;
  });
  return cutAt >= 0 ? redactPreview(text.slice(0, cutAt)) : redactString(out);
}

const isTruncated = (v: unknown): v is TruncatedValue =>
  typeof v === 'object' && v !== null && (v as TruncatedValue).$truncated === true && typeof (v as TruncatedValue).preview === 'string';

/** A decoded trace value (src/pipeline/trace-values.ts `decodeValue`) redacted: a JSON value, or a truncated value's preview. */
export const redactTraced = (v: unknown): unknown => (isTruncated(v) ? { ...v, preview: redactPreview(v.preview) } : redactValue(v));
