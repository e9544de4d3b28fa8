/**
 * The console's OpenID Connect sign-in (authorization code + PKCE, through
 * openid-client): `start` sends the browser to the provider, `finish` takes
 * it back. Between the two a pending sign-in lives in Redis for 10 minutes
 * under the sha256 of its `state`, with the PKCE verifier, the nonce, the
 * console page to return to, and the sha256 of a random value held in an
 * HttpOnly cookie of this browser: a callback whose state is unknown, already
 * used (GETDEL: single use), or carried by another browser (a link forwarded
 * with someone's code in it) is refused before the code is spent.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import * as client from 'openid-client';
import type { OidcConfig } from '@heapcap/config';
import type { RedisClient } from '@heapcap/state';
import { z } from 'zod';

/** The cookie that binds a pending sign-in to the browser that started it (SameSite=Lax: it must come back on the provider's redirect). */
export const PENDING_COOKIE = 'heapcap_oidc';
/** How long a started sign-in may take at the provider. */
export const PENDING_TTL_MS = 10 * 60_000;
/** Deadline of each request to the provider (discovery, token, userinfo), seconds. */
const PROVIDER_TIMEOUT_S = 10;

const PendingSchema = z.strictObject({ verifier: z.string(), nonce: z.string(), returnTo: z.string(), binding: z.string() });

/** Why a sign-in was refused: a stable code, the HTTP status, and a message for the person. */
export class OidcRefusal extends Error {
  readonly code: 'oidc_state_mismatch' | 'oidc_provider_error' | 'oidc_exchange_failed' | 'oidc_unavailable' | 'oidc_no_grant';
  readonly status: number;
  constructor(code: OidcRefusal['code'], status: number, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'OidcRefusal';
    this.code = code;
    this.status = status;
  }
}

/** What a finished sign-in proved: the id token's claims, the id token, the access token, where to return. */
export interface FinishedSignIn {
  claims: Record<string, unknown>;
  idToken: string | undefined;
  /** Used once, for userinfo; never stored. */
  accessToken: string;
  returnTo: string;
}

/** Console routes one may return to after sign-in: the hash route of the console (`#/captures/ID`), nothing else. */
export const RETURN_TO = /^#\/[A-Za-z0-9/_.:?=&%-]{0,300}$/;

function sha256(s: string): string {
  return createHash('sha256').update(s, 'utf8').digest('hex');
}

function sameHash(a: string, b: string): boolean {
  const x = Buffer.from(a, 'utf8');
  const y = Buffer.from(b, 'utf8');
  return x.length === y.length && timingSafeEqual(x, y);
}

/** The OIDC relying party of one API process. */
export class OidcSignIn {
  readonly #config: OidcConfig;
  readonly #redis: RedisClient;
  readonly #base: string;
  /** Where the provider sends the browser back: HEAPCAP_PUBLIC_URL + /auth/oidc/callback (registered at the provider). */
  readonly redirectUri: string;
  /** Where the provider's logout returns: the console. */
  readonly postLogoutUri: string;
  #discovered: Promise<client.Configuration> | undefined;

  constructor(opts: { config: OidcConfig; publicUrl: string; redis: RedisClient; prefix: string }) {
    this.#config = opts.config;
    this.#redis = opts.redis;
    this.#base = `${opts.prefix}:hc:console:oidc:`;
    this.redirectUri = `${opts.publicUrl}/auth/oidc/callback`;
    this.postLogoutUri = `${opts.publicUrl}/ui/`;
  }

  /** What the sign-in button says. */
  get displayName(): string {
    return this.#config.displayName;
  }

  /**
   * The provider's configuration, discovered on first use and kept; a failed
   * discovery is not kept, so the next sign-in tries again (the API starts
   * and serves machines while the provider is down).
   */
  async configuration(): Promise<client.Configuration> {
    this.#discovered ??= this.#discover();
    try {
      return await this.#discovered;
    } catch (err) {
      this.#discovered = undefined;
      throw new OidcRefusal('oidc_unavailable', 503, `the identity provider at ${this.#config.issuer} could not be reached or read (${(err as Error).message}); try again, or sign in with an API token`, { cause: err });
    }
  }

  async #discover(): Promise<client.Configuration> {
    const issuer = new URL(this.#config.issuer);
    const secret = this.#config.clientSecret;
    // http:// only passes config validation for a loopback issuer (tests, a port-forward).
    const execute = issuer.protocol === 'http:' ? [client.allowInsecureRequests] : [];
    return client.discovery(issuer, this.#config.clientId, secret === undefined ? undefined : { client_secret: secret }, secret === undefined ? client.None() : client.ClientSecretBasic(secret), {
      execute,
      timeout: PROVIDER_TIMEOUT_S,
    });
  }

  /** Starts a sign-in that returns to `returnTo` (a console hash route): the provider's URL and the cookie value that binds it to this browser. */
  async start(returnTo: string): Promise<{ url: URL; binding: string }> {
    const cfg = await this.configuration();
    const verifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const nonce = client.randomNonce();
    const binding = randomBytes(32).toString('base64url');
    const pending: z.infer<typeof PendingSchema> = { verifier, nonce, returnTo, binding: sha256(binding) };
    await this.#redis.set(this.#base + sha256(state), JSON.stringify(pending), 'PX', PENDING_TTL_MS);
    const url = client.buildAuthorizationUrl(cfg, {
      redirect_uri: this.redirectUri,
      scope: this.#config.scopes.join(' '),
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      nonce,
    });
    return { url, binding };
  }

  /**
   * Finishes the sign-in the provider redirected back with (`query`: the
   * callback's query string): checks the state against this browser's pending
   * sign-in (spent either way), then exchanges the code with the verifier and
   * checks the id token (signature, issuer, audience, nonce, expiry).
   */
  async finish(query: URLSearchParams, binding: string | undefined): Promise<FinishedSignIn> {
    const state = query.get('state');
    const raw = state === null || state.length > 512 ? null : await this.#redis.getdel(this.#base + sha256(state));
    const pending = raw === null ? undefined : PendingSchema.safeParse(JSON.parse(raw)).data;
    if (pending === undefined || binding === undefined || !sameHash(pending.binding, sha256(binding))) {
      throw new OidcRefusal(
        'oidc_state_mismatch',
        400,
        'this sign-in does not match one started in this browser: its state was altered, already used, or is older than 10 minutes. Nothing was signed in; start again from the console.',
      );
    }
    const error = query.get('error');
    if (error !== null) {
      const description = query.get('error_description');
      throw new OidcRefusal('oidc_provider_error', 400, `the identity provider refused the sign-in: ${error}${description === null ? '' : ` (${description})`}`);
    }
    const cfg = await this.configuration();
    const current = new URL(this.redirectUri);
    current.search = query.toString();
    let tokens: Awaited<ReturnType<typeof client.authorizationCodeGrant>>;
    try {
      tokens = await client.authorizationCodeGrant(cfg, current, { pkceCodeVerifier: pending.verifier, expectedState: state ?? undefined, expectedNonce: pending.nonce, idTokenExpected: true });
    } catch (err) {
      throw new OidcRefusal('oidc_exchange_failed', 400, `the identity provider's answer could not be verified (${(err as Error).message}); start again from the console`, { cause: err });
    }
    const claims: Record<string, unknown> = { ...tokens.claims() };
    return { claims, idToken: tokens.id_token, accessToken: tokens.access_token, returnTo: pending.returnTo };
  }

  /** The userinfo claims for a token answer (where the id token lacks the grant claim, e.g. Okta's groups), or {} when the provider has no userinfo endpoint. */
  async userinfo(accessToken: string, subject: string): Promise<Record<string, unknown>> {
    const cfg = await this.configuration();
    if (cfg.serverMetadata().userinfo_endpoint === undefined) return {};
    try {
      return { ...(await client.fetchUserInfo(cfg, accessToken, subject)) };
    } catch (err) {
      throw new OidcRefusal('oidc_exchange_failed', 400, `the identity provider's userinfo answer could not be read or verified (${(err as Error).message}); start again from the console`, { cause: err });
    }
  }

  /** The provider's logout URL for a session's id token (RP-initiated logout), or undefined when it offers none. */
  async endSessionUrl(idToken: string | undefined): Promise<string | undefined> {
    const cfg = await this.configuration();
    if (cfg.serverMetadata().end_session_endpoint === undefined) return undefined;
    const params: Record<string, string> = { post_logout_redirect_uri: this.postLogoutUri };
    if (idToken !== undefined) params['id_token_hint'] = idToken;
    return client.buildEndSessionUrl(cfg, params).href;
  }
}

/** Set-Cookie for the pending sign-in's binding (empty + Max-Age=0 clears it). Path=/auth/oidc: only the callback reads it. */
export function pendingCookie(value: string, maxAgeSeconds: number, secure: boolean): string {
  return `${PENDING_COOKIE}=${value}; Path=/auth/oidc; HttpOnly; SameSite=Lax; Max-Age=${maxAgeSeconds}${secure ? '; Secure' : ''}`;
}
