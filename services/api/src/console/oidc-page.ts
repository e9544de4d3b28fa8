/**
 * The page a refused OIDC sign-in ends on: served by the API itself (the
 * console is not signed in, and the reason must not travel in a URL someone
 * could craft), plain HTML with no script, saying why and how to go on.
 */
import type { FastifyReply } from 'fastify';
import type { OidcRefusal } from './oidc.ts';

/** No script, no framing, nothing loaded from anywhere: the page is its text. */
const PAGE_CSP = "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const TITLES: Record<OidcRefusal['code'], string> = {
  oidc_no_grant: 'Signed in, but heapcap gives you no access',
  oidc_state_mismatch: 'This sign-in was refused',
  oidc_provider_error: 'The identity provider refused the sign-in',
  oidc_exchange_failed: 'The sign-in could not be verified',
  oidc_unavailable: 'The identity provider cannot be reached',
};

function escape(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** Sends the refusal page for `refusal` (its status, its code in data-code for tools and tests). */
export function sendRefusalPage(reply: FastifyReply, refusal: OidcRefusal): FastifyReply {
  const title = TITLES[refusal.code];
  const body = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${escape(title)} · heapcap</title></head>
<body>
<main data-code="${refusal.code}">
<h1>${escape(title)}</h1>
<p id="why">${escape(refusal.message)}</p>
<p>Code: <code>${refusal.code}</code></p>
<p><a href="/ui/">Back to the heapcap console</a></p>
</main>
</body>
</html>
`;
  return reply
    .code(refusal.status)
    .header('content-security-policy', PAGE_CSP)
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer')
    .header('cache-control', 'no-store')
    .type('text/html; charset=utf-8')
    .send(body);
}
