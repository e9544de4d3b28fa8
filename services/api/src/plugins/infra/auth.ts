/**
 * Bearer-token authentication and scope checks, in `onRequest` so that an
 * unauthenticated request is refused before its body is read or parsed.
 *
 * Every route says what it needs in its `config`: `public: true` (health,
 * metrics, docs), or `scope: '…'`. A route that says neither still needs a
 * valid token (deny by default; this also covers unknown URLs).
 */
import fp from 'fastify-plugin';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { ApiError } from '../../errors.ts';
import { DEV_PRINCIPAL, type Principal } from '../../auth/scopes.ts';
import { verifyToken, type TokenEntry } from '../../auth/tokens.ts';
import type { OidcGrants } from '../../auth/oidc-grants.ts';
import { AuthFailureLimiter, addressKey } from '../../auth/failure-limit.ts';
import { CSRF_HEADER, SESSION_COOKIE, csrfMatches, readCookie, type ConsoleSessions, type Session } from '../../console/sessions.ts';

declare module 'fastify' {
  interface FastifyInstance {
    /** Failed authentications per client address (bearer tokens and Slack signatures alike). */
    authFailures: AuthFailureLimiter;
  }
}

/** How callers are authenticated: tokens from the tokens file, or `--dev` (no auth, loopback only). */
export type AuthMode = { kind: 'tokens'; tokens: readonly TokenEntry[]; oidcGrants?: OidcGrants | undefined } | { kind: 'dev' };

const CHALLENGE = 'Bearer realm="heapcap"';
// RFC 6750: the token is base64-ish; anything else in the header is malformed.
const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;

function unauthorized(message: string, invalid: boolean): ApiError {
  return new ApiError('unauthorized', message, {}, {
    'www-authenticate': invalid ? `${CHALLENGE}, error="invalid_token"` : CHALLENGE,
  });
}

/** Resolves the caller of `req` under `mode`; throws `unauthorized` when there is none. */
export function authenticate(mode: AuthMode, req: FastifyRequest): Principal {
  if (mode.kind === 'dev') return DEV_PRINCIPAL;
  const header = req.headers.authorization;
  if (header === undefined || header === '') {
    throw unauthorized('this endpoint needs a bearer token: Authorization: Bearer <token>', false);
  }
  const token = BEARER.exec(header)?.[1];
  if (token === undefined) throw unauthorized('malformed Authorization header: expected "Bearer <token>"', true);
  const principal = verifyToken(mode.tokens, token);
  if (principal === undefined) throw unauthorized('invalid token', true);
  return principal;
}

/** The authenticated caller of a route that is not public (set by the auth hook). */
export function principalOf(req: FastifyRequest): Principal {
  if (req.principal === null) throw new ApiError('internal', 'route ran without an authenticated principal');
  return req.principal;
}

/** Options of the auth plugin: the mode, and the limit on failed authentications per client address. */
export interface AuthPluginOptions {
  mode: AuthMode;
  failures: { max: number; windowMs: number };
  /** Console sessions (tokens mode): a session cookie is an alternative to the bearer header. */
  sessions?: ConsoleSessions | undefined;
}

/** Methods that change nothing: a cookie-authenticated request of any other method needs the CSRF header. */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * The caller of a request that carries the console's session cookie and no
 * Authorization header (a bearer header wins). An unknown or expired session
 * is a failed authentication like a bad token; a write without the session's
 * CSRF token in its header is refused with `csrf_failed`: the cookie goes with
 * any request the browser makes to this origin, the header only with ours.
 */
async function authenticateSession(sessions: ConsoleSessions, limiter: AuthFailureLimiter, id: string, req: FastifyRequest): Promise<Session> {
  const session = await sessions.resolve(id);
  if (session === undefined) {
    limiter.fail(addressKey(req.ip));
    throw unauthorized('the console session has expired or was signed out: sign in again', true);
  }
  if (!SAFE_METHODS.has(req.method) && !csrfMatches(session, req.headers[CSRF_HEADER])) {
    throw new ApiError('csrf_failed', `a write with the session cookie needs the session's CSRF token in the ${CSRF_HEADER} header`, { header: CSRF_HEADER });
  }
  return session;
}

/** The 429 for an address over its failed-authentication limit (`what` failed; `how` to retry). */
export function tooManyFailures(limiter: AuthFailureLimiter, waitMs: number, what: string, how: string): ApiError {
  const seconds = Math.max(1, Math.ceil(waitMs / 1000));
  return new ApiError(
    'rate_limited',
    `${limiter.max} requests ${what} came from this address within ${Math.round(limiter.windowMs / 1000)} s; retry in ${seconds} s, ${how}`,
    { limit: limiter.max, retryAfterSeconds: seconds },
    { 'retry-after': String(seconds) },
  );
}

/**
 * authenticate(), refused with 429 before the token is looked at when the
 * client address (req.ip: X-Forwarded-For only where trustProxy says so) is
 * over its failed-authentication limit; every 401 counts against it.
 */
function authenticateLimited(mode: AuthMode, limiter: AuthFailureLimiter, req: FastifyRequest): Principal {
  if (mode.kind === 'dev') return DEV_PRINCIPAL;
  const key = addressKey(req.ip);
  const waitMs = limiter.blockedFor(key);
  if (waitMs > 0) throw tooManyFailures(limiter, waitMs, 'with a missing or invalid token', 'with a valid token');
  try {
    return authenticate(mode, req);
  } catch (err) {
    limiter.fail(key);
    throw err;
  }
}

const authPlugin: FastifyPluginAsync<AuthPluginOptions> = async (app, { mode, failures, sessions }) => {
  const limiter = new AuthFailureLimiter(failures);
  // Shared with the Slack routes: an unsigned Slack request is a failed authentication too.
  app.decorate('authFailures', limiter);
  app.decorateRequest('principal', null);
  app.decorateRequest('session', null);
  app.addHook('onRequest', async (req) => {
    const config = req.routeOptions.config;
    if (config.public === true) return;
    const cookie = sessions !== undefined && mode.kind === 'tokens' && req.headers.authorization === undefined ? readCookie(req.headers.cookie, SESSION_COOKIE) : undefined;
    if (cookie !== undefined && sessions !== undefined) req.session = await authenticateSession(sessions, limiter, cookie, req);
    const principal = req.session?.principal ?? authenticateLimited(mode, limiter, req);
    req.principal = principal;
    const scope = config.scope;
    if (scope !== undefined && !principal.scopes.has(scope)) {
      throw new ApiError('forbidden', `token "${principal.name}" lacks the ${scope} scope`, { requiredScope: scope });
    }
  });
};

export default fp(authPlugin, { name: 'heapcap-auth' });
