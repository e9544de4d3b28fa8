/**
 * Console sessions: an API token exchanged once (POST /v1/session) for a
 * random session id in an HttpOnly cookie, so the browser never keeps the
 * token itself. Sessions live in Redis with a fixed expiry; only the sha256 of
 * the id is a key, so a Redis dump holds no usable cookie. A session stores the
 * token's name, never its scopes: each request takes the scopes the tokens file
 * gives that name now, so removing a token (and restarting) ends its sessions.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { RedisClient } from '@heapcap/state';
import { z } from 'zod';
import type { Principal } from '../auth/scopes.ts';
import type { TokenEntry } from '../auth/tokens.ts';

/** The cookie that carries the session id. */
export const SESSION_COOKIE = 'heapcap_session';
/** The header a cookie-authenticated write must carry, equal to the session's CSRF token (double submit). */
export const CSRF_HEADER = 'x-heapcap-csrf';

const StoredSessionSchema = z.strictObject({
  name: z.string(),
  csrf: z.string(),
  createdAt: z.number().int(),
  expiresAt: z.number().int(),
});
type StoredSession = z.infer<typeof StoredSessionSchema>;

/** A live session: who it acts as (scopes as the tokens file says now), its CSRF token and expiry. */
export interface Session {
  principal: Principal;
  csrf: string;
  expiresAt: number;
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
  /** How long a session lives from sign-in (absolute, not sliding). */
  readonly ttlMs: number;

  constructor(opts: { redis: RedisClient; prefix: string; tokens: readonly TokenEntry[]; ttlMs: number }) {
    this.#redis = opts.redis;
    this.#base = `${opts.prefix}:hc:console:session:`;
    this.#tokens = opts.tokens;
    this.ttlMs = opts.ttlMs;
  }

  #key(id: string): string {
    return this.#base + createHash('sha256').update(id, 'utf8').digest('hex');
  }

  #principal(name: string): Principal | undefined {
    const entry = this.#tokens.find((t) => t.name === name);
    return entry === undefined ? undefined : { name: entry.name, scopes: entry.scopes };
  }

  /** Creates a session for `principal` (authenticated by its bearer token). */
  async create(principal: Principal, now = Date.now()): Promise<NewSession> {
    const id = secret();
    const stored: StoredSession = { name: principal.name, csrf: secret(), createdAt: now, expiresAt: now + this.ttlMs };
    await this.#redis.set(this.#key(id), JSON.stringify(stored), 'PX', this.ttlMs);
    return { id, principal, csrf: stored.csrf, expiresAt: stored.expiresAt };
  }

  /** The live session with this id, or undefined (unknown, expired, signed out, or its token is gone). */
  async resolve(id: string): Promise<Session | undefined> {
    if (!ID_SHAPE.test(id)) return undefined;
    const raw = await this.#redis.get(this.#key(id));
    if (raw === null) return undefined;
    const parsed = StoredSessionSchema.safeParse(JSON.parse(raw));
    if (!parsed.success) return undefined;
    const principal = this.#principal(parsed.data.name);
    if (principal === undefined) return undefined;
    return { principal, csrf: parsed.data.csrf, expiresAt: parsed.data.expiresAt };
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

/** Set-Cookie for a session id: HttpOnly, SameSite=Strict, Path=/, Secure when the request came over TLS. */
export function sessionCookie(id: string, maxAgeSeconds: number, secure: boolean): string {
  return `${SESSION_COOKIE}=${id}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${maxAgeSeconds}${secure ? '; Secure' : ''}`;
}
