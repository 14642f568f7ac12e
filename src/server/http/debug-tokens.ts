/**
 * Credentials of the debug compile page (docs/security.md, "Debug compile page"), so the API or studio token
 * that opens the page never stays in its address, its source or a Referer:
 *
 * - a **ticket** (`iar_ticket_…`, 60 s): what `compile?html&token=T` redirects to (`…&ticket=…`). It only
 *   opens the page of that app and action, for the token that asked for it.
 * - a **page token** (`iar_debug_…`, 30 min): what the page embeds for its client's API calls. It acts as an
 *   API token of that one app (whatever opened the page: a studio token is narrowed to the app) and cannot
 *   open another debug page, so no chain of pages outlives the first one.
 *
 * Both are stateless: a base64url JSON claim and an HMAC-SHA256 of it under a random secret kept in the
 * `settings` table (shared by every instance on the same database). Each use re-reads the token behind it,
 * so revoking that token ends its tickets and page tokens at once. Expiry is checked against `ctx.clock()`.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { ServerContext } from '../context.js';
import type { Database } from '../db/database.js';
import type { TokenRecord } from '../store/identity.js';

export const TICKET_PREFIX = 'iar_ticket_';
export const PAGE_TOKEN_PREFIX = 'iar_debug_';
/** How long a ticket opens the page: it only has to survive the redirect. */
export const TICKET_TTL_MS = 60_000;
/** How long the page's own token calls the API. */
export const PAGE_TOKEN_TTL_MS = 30 * 60_000;

const SECRET_SETTING = 'debugPage.secret';

interface Claim {
  /** What it is: a ticket or a page token. */
  k: 'ticket' | 'page';
  /** Id of the token that opened the page. */
  t: number;
  /** App id. */
  a: number;
  /** Action id (tickets only). */
  x?: number;
  /** Expiry, ms since the epoch (server clock). */
  e: number;
  /** Random, so two tickets of the same millisecond differ. */
  n: string;
}

const secrets = new WeakMap<Database, Promise<Buffer>>();

/** The server's HMAC secret: created once in `settings`; the first writer wins among instances. */
function secret(db: Database): Promise<Buffer> {
  let found = secrets.get(db);
  if (!found) {
    found = (async () => {
      await db.run('INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING', [SECRET_SETTING, randomBytes(32).toString('base64')]);
      const row = await db.get<{ value: string }>('SELECT value FROM settings WHERE key = ?', [SECRET_SETTING]);
      return Buffer.from(row!.value, 'base64');
    })();
    found.catch(() => secrets.delete(db));
    secrets.set(db, found);
  }
  return found;
}

const prefixOf = (kind: Claim['k']) => (kind === 'ticket' ? TICKET_PREFIX : PAGE_TOKEN_PREFIX);
const mac = (key: Buffer, text: string) => createHmac('sha256', key).update(text).digest();

async function sign(ctx: ServerContext, claim: Claim): Promise<string> {
  const body = `${prefixOf(claim.k)}${Buffer.from(JSON.stringify(claim)).toString('base64url')}`;
  return `${body}.${mac(await secret(ctx.db), body).toString('base64url')}`;
}

const isId = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v > 0;

/** The claim of a well-signed, unexpired credential of that kind, else undefined. */
async function verify(ctx: ServerContext, kind: Claim['k'], value: string): Promise<Claim | undefined> {
  if (value.length > 1000 || !value.startsWith(prefixOf(kind))) return undefined;
  const dot = value.lastIndexOf('.');
  if (dot < 0) return undefined;
  const body = value.slice(0, dot);
  const given = Buffer.from(value.slice(dot + 1), 'base64url');
  const expected = mac(await secret(ctx.db), body);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
  let claim: Partial<Claim>;
  try {
    claim = JSON.parse(Buffer.from(body.slice(prefixOf(kind).length), 'base64url').toString('utf8')) as Partial<Claim>;
  } catch {
    return undefined;
  }
  if (claim.k !== kind || !isId(claim.t) || !isId(claim.a) || typeof claim.e !== 'number') return undefined;
  if (kind === 'ticket' && !isId(claim.x)) return undefined;
  if (!(ctx.clock() < claim.e)) return undefined;
  return claim as Claim;
}

async function tokenById(db: Database, id: number): Promise<TokenRecord | undefined> {
  return db.get<TokenRecord>('SELECT id, token, kind, name, organization_id AS organizationId, app_id AS appId FROM tokens WHERE id = ?', [id]);
}

/** Whether the token may open a debug page: API and studio tokens (not client tokens, not a page's own token). */
export function mayOpenDebugPage(auth: TokenRecord): boolean {
  return (auth.kind === 'api' || auth.kind === 'studio') && !auth.token.startsWith(PAGE_TOKEN_PREFIX);
}

/** A ticket that opens the debug page of `actionId` in `appId` for `opener`, valid TICKET_TTL_MS. */
export function issueTicket(ctx: ServerContext, opener: TokenRecord, appId: number, actionId: number): Promise<string> {
  return sign(ctx, { k: 'ticket', t: opener.id, a: appId, x: actionId, e: ctx.clock() + TICKET_TTL_MS, n: randomBytes(9).toString('base64url') });
}

/** The token that asked for the ticket, if the ticket is genuine, unexpired, for this app and action, and that token still may open pages. */
export async function redeemTicket(ctx: ServerContext, ticket: string, appId: number, actionId: number): Promise<TokenRecord | undefined> {
  const claim = await verify(ctx, 'ticket', ticket);
  if (!claim || claim.a !== appId || claim.x !== actionId) return undefined;
  const opener = await tokenById(ctx.db, claim.t);
  return opener && mayOpenDebugPage(opener) ? opener : undefined;
}

/** The page's own token: an API token of `appId` for PAGE_TOKEN_TTL_MS, on behalf of `opener`. */
export function issuePageToken(ctx: ServerContext, opener: TokenRecord, appId: number): Promise<string> {
  return sign(ctx, { k: 'page', t: opener.id, a: appId, e: ctx.clock() + PAGE_TOKEN_TTL_MS, n: randomBytes(9).toString('base64url') });
}

export const isPageToken = (value: string) => value.startsWith(PAGE_TOKEN_PREFIX);

/**
 * What a page token stands for (for the auth middleware): an API token of its app, with the id and name of
 * the token that opened the page, or undefined once expired, forged, or when that token is gone.
 */
export async function resolvePageToken(ctx: ServerContext, value: string): Promise<TokenRecord | undefined> {
  const claim = await verify(ctx, 'page', value);
  if (!claim) return undefined;
  const opener = await tokenById(ctx.db, claim.t);
  if (!opener || !mayOpenDebugPage(opener)) return undefined;
  if (opener.kind === 'api' && opener.appId !== claim.a) return undefined;
  return { id: opener.id, token: value, kind: 'api', name: opener.name, organizationId: opener.organizationId, appId: claim.a };
}
