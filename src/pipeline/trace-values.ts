/**
 * The `input` and `output` of trace entries (docs/pipeline.md "Trace"): each value is turned into its JSON
 * text where it lives (the guest for context values, the host for host built-ins' results), with keys that
 * look like secrets redacted, and cut at `limits.traceValueBytes` characters. Both sides make the same text
 * (the guest with `TRACE_VALUE_JS`, the host with `encodeValue`), so values the program traces and values
 * the host traces (host built-ins' results, page functions' returns) are encoded alike.
 *
 * An encoded value is `[length, text]`: `length` characters of JSON, `text` the whole JSON when it fits,
 * else its first characters. `decodeValue` turns it into the JSON value or a {@link TruncatedValue}.
 */
import type { TruncatedValue } from '../contract/pipeline.js';

/**
 * Keys whose values are redacted (any depth, input and output): a key that, lowercased, contains one of these
 * (authorization, cookie, passw…: password/passwd, pwd, secret, token, api key, access key, private key,
 * credential, session, bearer, jwt).
 */
export const SECRET_WORDS: readonly string[] = [
  'authorization',
  'cookie',
  'passw',
  'secret',
  'token',
  'apikey',
  'api_key',
  'api-key',
  'api key',
  'privatekey',
  'private_key',
  'private-key',
  'private key',
  'credential',
  'session',
  'pwd',
  'accesskey',
  'access_key',
  'access-key',
  'bearer',
  'jwt',
];
/** The words as one pattern, tested on lowercased text (one regex call instead of one search per word). */
const SECRET_PATTERN = new RegExp(SECRET_WORDS.map((w) => w.replace(/[-\\^$*+?.()|[\]{}]/g, '\\$&')).join('|'));
/** Whether a key is secret-looking (see {@link SECRET_WORDS}); also true for a JSON text that mentions one anywhere. */
export const mentionsSecret = (text: string): boolean => SECRET_PATTERN.test(text.toLowerCase());
export const REDACTED = '[redacted]';
/** What a value that has no JSON (a function, a cycle, a BigInt) is traced as. */
export const NOT_JSON = '[not JSON]';
/** Trace values nested deeper than this are kept as a preview text (log records travel as JSON bodies of bounded depth). */
export const MAX_VALUE_DEPTH = 32;

export type EncodedValue = [length: number, text: string];

const redact = (key: string, value: unknown) => (key !== '' && mentionsSecret(key) ? REDACTED : value);

/** A cut that does not end inside a surrogate pair. */
function cut(text: string, max: number): string {
  const c = text.charCodeAt(max - 1);
  return text.slice(0, c >= 0xd800 && c < 0xdc00 ? max - 1 : max);
}

/** The host's encoding of a value (undefined when there is none). */
export function encodeValue(value: unknown, max: number): EncodedValue | undefined {
  if (value === undefined) return undefined;
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
    // The kept part mentions a secret-looking word: written again with the keys redacted.
    if (text !== undefined && mentionsSecret(text.length > max ? text.slice(0, max) : text)) text = JSON.stringify(value, redact);
  } catch {
    text = undefined;
  }
  if (text === undefined) text = JSON.stringify(NOT_JSON);
  return [text.length, text.length > max ? cut(text, max) : text];
}

/**
 * The same in the guest: `TV(value, max)` is `0` (no value) or `[length, text]`. Uses the base script's `J`
 * (JSON captured before user code ran); never throws (built-ins tampered with by user code give `[0, '']`,
 * traced as a truncated value).
 */
export const TRACE_VALUE_JS =
  `var SP=${SECRET_PATTERN.toString()},RP=function(k,v){return k!==''&&SK(k)?${JSON.stringify(REDACTED)}:v};` +
  'function SK(t){return SP.test(t.toLowerCase())}' +
  `function TV(v,max){if(v===undefined)return 0;var t;try{t=J.stringify(v);if(t!==undefined&&SK(t.length>max?t.slice(0,max):t))t=J.stringify(v,RP)}catch(e){t=undefined}` +
  `try{if(typeof t!=='string')t=${JSON.stringify(JSON.stringify(NOT_JSON))};if(t.length<=max)return[t.length,t];var c=t.charCodeAt(max-1);return[t.length,t.slice(0,c>=0xd800&&c<0xdc00?max-1:max)]}catch(e){return[0,'']}}`;

/** Deepest nesting of arrays and objects in a JSON text. */
function depthOf(text: string): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92) i++;
      else if (c === 34) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 91 || c === 123) deepest = Math.max(deepest, ++depth);
    else if (c === 93 || c === 125) depth--;
  }
  return deepest;
}

const truncated = (length: number, preview: string): TruncatedValue => ({ $truncated: true, length, preview });

/** Whether a value came from a well-formed encoding (guest data is checked: user code can tamper with the guest's built-ins). */
export const isEncoded = (v: unknown): v is EncodedValue =>
  Array.isArray(v) && v.length === 2 && typeof v[0] === 'number' && Number.isInteger(v[0]) && v[0] >= 0 && typeof v[1] === 'string';

/** The traced value of an encoding: the JSON value, or a {@link TruncatedValue} when cut (or too deep, or not parseable). */
export function decodeValue([length, text]: EncodedValue): unknown {
  // (A text can nest at most half its length deep.)
  if (length !== text.length || (text.length > 2 * MAX_VALUE_DEPTH && depthOf(text) > MAX_VALUE_DEPTH)) return truncated(length, text);
  try {
    return JSON.parse(text);
  } catch {
    return truncated(length, text);
  }
}

/** A value left out because the run's trace budget is used up: its length, no preview. */
export const omittedValue = (length: number): TruncatedValue => truncated(length, '');
