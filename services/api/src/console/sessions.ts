/**
 * Console sessions: an API token exchanged once (POST /v1/session) for a
 * random session id in an HttpOnly cookie, so the browser never keeps the
 * token itself. Sessions live in Redis with a fixed expiry; only the sha256 of
 * the id is a key, so a Redis dump holds no usable cookie. A session stores the
 * token's name, never its scopes: each request takes the scopes the tokens file
 * gives that name now, so removing a token (and restarting) ends its sessions.
 * A session signed in through OpenID Connect (console/oidc.ts) stores the
 * person's claim values instead, and takes its scopes from the OIDC grants
 * file the same way: a person whose values no longer match a grant is signed
 * out at the next request.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { RedisClient } from '@heapcap/state';
import { z } from 'zod';
import type { Principal } from '../auth/scopes.ts';
import type { TokenEntry } from '../auth/tokens.ts';
import { grantsFor, type OidcGrants } from '../auth/oidc-grants.ts';

/** The cookie that carries the session id. */
export const SESSION_COOKIE = 'heapcap_session';
/** The header a cookie-authenticated write must carry, equal to the session's CSRF token (double submit). */
export const CSRF_HEADER = 'x-heapcap-csrf';

/** What an OIDC session keeps: the subject, the grant claim's values at sign-in, the id token (for the provider's logout). */
const StoredOidcSchema = z.strictObject({ subject: z.string(), values: z.array(z.string()), idToken: z.string().optional() });
export type OidcSessionFacts = z.infer<typeof StoredOidcSchema>;

const StoredSessionSchema = z.strictObject({
  name: z.string(),
  csrf: z.string(),
  createdAt: z.number().int(),
  expiresAt: z.number().int(),
  oidc: StoredOidcSchema.optional(),
});
type StoredSession = z.infer<typeof StoredSessionSchema>;

/** A live session: who it acts as (scopes as the tokens file says now), its CSRF token and expiry. */
export interface Session {
  principal: Principal;
  csrf: string;
  expiresAt: number;
  /** How it was signed in: an API token, or the OIDC provider (then with the id token for its logout). */
  via: 'tokens' | 'oidc';
  idToken?: string | undefined;
}

/** A new session: the id to put in the cookie (shown once, never stored) and the session. */
export interface NewSession extends Session {
  id: string;
}

/** 32 random bytes, base64url: the session id and the CSRF token. */
function secret(): string {
  return randomBytes(32).toString('base64url');
}

/** Session ids are 43 base64url characters; anything else is not looked up. */
const ID_SHAPE = /^[A-Za-z0-9_-]{43}$/;

/** Sessions in Redis under `<prefix>:hc:console:session:<sha256 of id>`. */
export class ConsoleSessions {
  readonly #redis: RedisClient;
  readonly #base: string;
  readonly #tokens: readonly TokenEntry[];
  readonly #oidcGrants: OidcGrants | undefined;
  /** How long a session lives from sign-in (absolute, not sliding). */
  readonly ttlMs: number;

  constructor(opts: { redis: RedisClient; prefix: string; tokens: readonly TokenEntry[]; ttlMs: number; oidcGrants?: OidcGrants | undefined }) {
    this.#redis = opts.redis;
    this.#base = `${opts.prefix}:hc:console:session:`;
    this.#tokens = opts.tokens;
    this.#oidcGrants = opts.oidcGrants;
    this.ttlMs = opts.ttlMs;
  }

  #key(id: string): string {
    return this.#base + createHash('sha256').update(id, 'utf8').digest('hex');
  }

  #principal(name: string): Principal | undefined {
    const entry = this.#tokens.find((t) => t.name === name);
    return entry === undefined ? undefined : { name: entry.name, scopes: entry.scopes };
  }

  /** Creates a session for `principal` (authenticated by its bearer token, or by the OIDC provider with `oidc`'s facts). */
  async create(principal: Principal, now = Date.now(), oidc?: OidcSessionFacts): Promise<NewSession> {
    const id = secret();
    const stored: StoredSession = { name: principal.name, csrf: secret(), createdAt: now, expiresAt: now + this.ttlMs, oidc };
    await this.#redis.set(this.#key(id), JSON.stringify(stored), 'PX', this.ttlMs);
    return { id, principal, csrf: stored.csrf, expiresAt: stored.expiresAt, via: oidc === undefined ? 'tokens' : 'oidc', idToken: oidc?.idToken };
  }

  /** An OIDC session's principal: the scopes the grants file gives its claim values now (none: no principal). */
  #oidcPrincipal(name: string, values: readonly string[]): Principal | undefined {
    if (this.#oidcGrants === undefined) return undefined;
    const { scopes } = grantsFor(this.#oidcGrants, values);
    return scopes.size === 0 ? undefined : { name, scopes };
  }

  /** The live session with this id, or undefined (unknown, expired, signed out, or its token is gone). */
  async resolve(id: string): Promise<Session | undefined> {
    if (!ID_SHAPE.test(id)) return undefined;
    const raw = await this.#redis.get(this.#key(id));
    if (raw === null) return undefined;
    const parsed = StoredSessionSchema.safeParse(JSON.parse(raw));
    if (!parsed.success) return undefined;
    const { name, oidc } = parsed.data;
    const principal = oidc === undefined ? this.#principal(name) : this.#oidcPrincipal(name, oidc.values);
    if (principal === undefined) return undefined;
    return { principal, csrf: parsed.data.csrf, expiresAt: parsed.data.expiresAt, via: oidc === undefined ? 'tokens' : 'oidc', idToken: oidc?.idToken };
  }

  /** Ends the session (sign-out); unknown ids are ignored. */
  async remove(id: string): Promise<void> {
    if (ID_SHAPE.test(id)) await this.#redis.del(this.#key(id));
  }
}

/** True when the presented CSRF header equals the session's token (constant time). */
export function csrfMatches(session: Session, presented: string | string[] | undefined): boolean {
  if (typeof presented !== 'string') return false;
  const a = Buffer.from(presented, 'utf8');
  const b = Buffer.from(session.csrf, 'utf8');
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The value of cookie `name` in a Cookie header (RFC 6265 pairs split on `;`), or undefined. */
export function readCookie(header: string | undefined, name: string): string | undefined {
  if (header === undefined) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/**
 * Set-Cookie for a session id: HttpOnly, SameSite=Strict, Path=/, Secure when the request came over TLS.
 * Set on the OIDC callback too, a navigation the provider started: the browser
 * keeps it, and sends it with the console's own requests (same site) after.
 */
export function sessionCookie(id: string, maxAgeSeconds: number, secure: boolean): string {
  return `${SESSION_COOKIE}=${id}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${maxAgeSeconds}${secure ? '; Secure' : ''}`;
}
