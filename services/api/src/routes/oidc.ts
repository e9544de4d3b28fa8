/**
 * /auth/oidc: the console's OpenID Connect sign-in. `login` sends the browser
 * to the provider (remembering the console page to come back to); `callback`
 * takes it back, maps the person's claim values to scopes through the OIDC
 * grants file, creates the same session (cookie + CSRF token) a token
 * sign-in creates, and returns to that page. Every sign-in and every refusal
 * is audited; a refusal ends on a page that says why (console/oidc-page.ts).
 * Sign-out is DELETE /v1/session (routes/session.ts).
 */
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { addressKey } from '../auth/failure-limit.ts';
import { tooManyFailures } from '../plugins/infra/auth.ts';
import { claimValues, grantsFor, nameOf, type OidcGrants } from '../auth/oidc-grants.ts';
import { OidcRefusal, PENDING_COOKIE, PENDING_TTL_MS, RETURN_TO, pendingCookie, type OidcSignIn } from '../console/oidc.ts';
import { sendRefusalPage } from '../console/oidc-page.ts';
import { readCookie, sessionCookie, type ConsoleSessions } from '../console/sessions.ts';

/** Options: the relying party, the sessions store, the grants file. */
export interface OidcRoutesOptions {
  oidc: OidcSignIn;
  sessions: ConsoleSessions;
  grants: OidcGrants;
}

const LoginQuery = z.object({ return: z.string().max(400).optional() });

function overTls(req: FastifyRequest): boolean {
  return req.protocol === 'https';
}

const oidcRoutes: FastifyPluginAsync<OidcRoutesOptions> = async (app, { oidc, sessions, grants }) => {
  app.get('/login', { config: { public: true }, schema: { hide: true } }, async (req, reply) => {
    const parsed = LoginQuery.safeParse(req.query);
    const wanted = parsed.success ? parsed.data.return : undefined;
    // Only a console route: an open redirect to elsewhere would lend heapcap's name to phishing.
    const returnTo = wanted !== undefined && RETURN_TO.test(wanted) ? wanted : '#/';
    try {
      const { url, binding } = await oidc.start(returnTo);
      reply.header('set-cookie', pendingCookie(binding, Math.floor(PENDING_TTL_MS / 1000), overTls(req)));
      return reply.header('cache-control', 'no-store').redirect(url.href, 302);
    } catch (err) {
      if (err instanceof OidcRefusal) return sendRefusalPage(reply, err);
      throw err;
    }
  });

  app.get('/callback', { config: { public: true }, schema: { hide: true } }, async (req, reply) => {
    const query = new URLSearchParams(req.url.includes('?') ? req.url.slice(req.url.indexOf('?') + 1) : '');
    const clearPending = pendingCookie('', 0, overTls(req));
    const waitMs = app.authFailures.blockedFor(addressKey(req.ip));
    if (waitMs > 0) throw tooManyFailures(app.authFailures, waitMs, 'that matched no sign-in', 'from the console\'s sign-in page');
    let who = 'unknown';
    try {
      const done = await oidc.finish(query, readCookie(req.headers.cookie, PENDING_COOKIE));
      const subject = String(done.claims['sub']);
      let claims = done.claims;
      // Some providers (Okta's default groups claim) give the claim only at userinfo.
      if (claimValues(claims, grants.claim).length === 0) claims = { ...(await oidc.userinfo(done.accessToken, subject)), ...claims };
      who = nameOf(grants, claims);
      const values = claimValues(claims, grants.claim);
      const { grants: matched, scopes } = grantsFor(grants, values);
      if (scopes.size === 0) {
        const claim = grants.claim.join('.');
        throw new OidcRefusal(
          'oidc_no_grant',
          403,
          `you signed in at ${oidc.displayName} as ${who}, but no grant of heapcap's OIDC grants file (HEAPCAP_OIDC_GRANTS_FILE) matches your ${claim} ` +
            `(${values.length === 0 ? `the provider sent no ${claim} claim` : values.join(', ')}). Ask whoever runs heapcap to add a grant for one of them.`,
        );
      }
      const session = await sessions.create({ name: who, scopes }, Date.now(), { subject, values, idToken: done.idToken });
      await app.audit.record(req, {
        action: 'session.create',
        who,
        details: { via: 'oidc', subject, grants: matched, returnTo: done.returnTo, expiresAt: new Date(session.expiresAt).toISOString() },
      });
      reply.header('set-cookie', [clearPending, sessionCookie(session.id, Math.floor(sessions.ttlMs / 1000), overTls(req))]);
      return reply.header('cache-control', 'no-store').redirect(`/ui/${done.returnTo}`, 302);
    } catch (err) {
      if (!(err instanceof OidcRefusal)) throw err;
      // A callback that matches no pending sign-in is counted like a bad token.
      if (err.code === 'oidc_state_mismatch') app.authFailures.fail(addressKey(req.ip));
      await app.audit.record(req, { action: 'session.refused', who, details: { via: 'oidc', code: err.code, reason: err.message } });
      reply.header('set-cookie', clearPending);
      return sendRefusalPage(reply, err);
    }
  });
};

export default oidcRoutes;
