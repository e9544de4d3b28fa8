/**
 * /v1/session: the console's sign-in. POST with `Authorization: Bearer <token>`
 * creates a server-side session and sets its HttpOnly cookie; GET says who the
 * cookie (or `--dev`) signs in, with the CSRF token the console sends back on
 * writes; DELETE signs out. A bearer header is what proves the token here, so
 * the failed-authentication limit of every route applies to sign-in too.
 * People may sign in through the OpenID provider instead (routes/oidc.ts);
 * a deployment may then turn the token sign-in off (HEAPCAP_CONSOLE_TOKEN_SIGNIN).
 */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { ApiError } from '../errors.ts';
import { SCOPES, type Principal } from '../auth/scopes.ts';
import { SESSION_COOKIE, readCookie, sessionCookie, type ConsoleSessions, type Session } from '../console/sessions.ts';
import { principalOf } from '../plugins/infra/auth.ts';
import { errorResponses } from '../schemas/common.ts';
import { SessionViewSchema } from '../schemas/session.ts';
import type { OidcSignIn } from '../console/oidc.ts';

type SessionView = z.output<typeof SessionViewSchema>;

function view(mode: 'tokens' | 'dev', principal: Principal | null, session: Session | null, signIn: SessionView['signIn']): SessionView {
  return {
    signedIn: principal !== null,
    mode: session?.via === 'oidc' ? 'oidc' : mode,
    signIn,
    name: principal?.name ?? null,
    // In the order SCOPES lists them, so the answer does not depend on the tokens file's order.
    scopes: principal === null ? [] : SCOPES.filter((s) => principal.scopes.has(s)),
    csrfToken: session?.csrf ?? null,
    expiresAt: session === null ? null : new Date(session.expiresAt).toISOString(),
  };
}

/** The request came over TLS (itself, or a trusted proxy's X-Forwarded-Proto): the cookie is then Secure. */
function overTls(req: FastifyRequest): boolean {
  return req.protocol === 'https';
}

function clearCookie(req: FastifyRequest, reply: FastifyReply): void {
  reply.header('set-cookie', sessionCookie('', 0, overTls(req)));
}

/** Options: the sessions store (tokens mode) or none (`--dev`: everyone is `dev`, no cookie); the OIDC sign-in; whether tokens still sign in. */
export interface SessionRoutesOptions {
  sessions: ConsoleSessions | undefined;
  devPrincipal: Principal | undefined;
  oidc?: OidcSignIn | undefined;
  /** False with HEAPCAP_CONSOLE_TOKEN_SIGNIN=off: POST answers 403. */
  tokenSignIn?: boolean | undefined;
}

/** DELETE's answer for an OIDC session whose provider offers RP-initiated logout. */
const SignedOutSchema = z.object({ endSessionUrl: z.string().describe("the provider's logout (end_session_endpoint): the console navigates there to end the provider's session too") }).describe('SignedOut');

const sessionRoutes: FastifyPluginAsyncZod<SessionRoutesOptions> = async (app, { sessions, devPrincipal, oidc, tokenSignIn = true }) => {
  const mode = sessions === undefined ? 'dev' : 'tokens';
  const ways: SessionView['signIn'] = { token: sessions === undefined || tokenSignIn, oidc: oidc === undefined || sessions === undefined ? null : { name: oidc.displayName, url: '/auth/oidc/login' } };

  app.get(
    '',
    {
      config: { public: true },
      schema: {
        operationId: 'getSession',
        tags: ['session'],
        summary: 'Who the console session cookie signs in, and its CSRF token',
        description: 'Public: `signedIn: false` without a live session. In `--dev` every caller is `dev` with every scope.',
        security: [],
        response: { 200: SessionViewSchema, ...errorResponses(400, 503) },
      },
    },
    async (req) => {
      if (devPrincipal !== undefined) return view('dev', devPrincipal, null, ways);
      const id = readCookie(req.headers.cookie, SESSION_COOKIE);
      const session = id === undefined || sessions === undefined ? undefined : await sessions.resolve(id);
      return view(mode, session?.principal ?? null, session ?? null, ways);
    },
  );

  app.post(
    '',
    {
      schema: {
        operationId: 'createSession',
        tags: ['session'],
        summary: 'Sign in to the console: exchange the bearer token for a session cookie',
        description:
          'Authenticate with `Authorization: Bearer <token>`; the answer sets `heapcap_session` (HttpOnly, SameSite=Strict, Secure over TLS, Path=/) ' +
          'for the session\'s lifetime and gives the CSRF token to send in `x-heapcap-csrf` on every write made with the cookie. ' +
          'The session acts with the scopes the tokens file gives the token\'s name at each request. 409 `conflict` when authenticated by a session cookie; ' +
          '403 `forbidden` where the deployment turned token sign-in off (HEAPCAP_CONSOLE_TOKEN_SIGNIN=off: sign in through the OpenID provider).',
        response: { 201: SessionViewSchema, ...errorResponses(400, 401, 403, 409, 429, 503) },
      },
    },
    async (req, reply) => {
      const principal = principalOf(req);
      if (sessions === undefined) return reply.code(201).send(view('dev', principal, null, ways));
      if (!tokenSignIn) {
        throw new ApiError('forbidden', `signing in to the console with an API token is off here (HEAPCAP_CONSOLE_TOKEN_SIGNIN=off): sign in with ${oidc?.displayName ?? 'the identity provider'}; tokens still work for the API`);
      }
      if (req.session !== null) throw new ApiError('conflict', 'already signed in with a session: sign in with the bearer token, not the cookie');
      const session = await sessions.create(principal);
      await app.audit.record(req, { action: 'session.create', details: { expiresAt: new Date(session.expiresAt).toISOString() } });
      reply.header('set-cookie', sessionCookie(session.id, Math.floor(sessions.ttlMs / 1000), overTls(req)));
      return reply.code(201).send(view('tokens', principal, session, ways));
    },
  );

  app.delete(
    '',
    {
      schema: {
        operationId: 'deleteSession',
        tags: ['session'],
        summary: 'Sign out: end the session and clear its cookie',
        description:
          'With the cookie, the CSRF header is required like on any write. With a bearer token there is no session: 204 and nothing changes. ' +
          "A session signed in through the OpenID provider, where the provider offers RP-initiated logout, answers 200 with the provider's logout URL to navigate to.",
        response: { 200: SignedOutSchema, 204: z.null().describe('signed out'), ...errorResponses(400, 401, 403, 429, 503) },
      },
    },
    async (req, reply) => {
      const id = readCookie(req.headers.cookie, SESSION_COOKIE);
      const session = req.session;
      if (session !== null && id !== undefined && sessions !== undefined) {
        await sessions.remove(id);
        await app.audit.record(req, { action: 'session.delete', details: { via: session.via } });
      }
      clearCookie(req, reply);
      // The heapcap session is gone either way; the provider's logout is a step further the browser takes.
      const endSessionUrl = session?.via === 'oidc' && oidc !== undefined ? await oidc.endSessionUrl(session.idToken).catch(() => undefined) : undefined;
      if (endSessionUrl !== undefined) return reply.code(200).send({ endSessionUrl });
      return reply.code(204).send(null);
    },
  );
};

export default sessionRoutes;
