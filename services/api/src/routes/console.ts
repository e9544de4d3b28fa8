/**
 * The web console at /ui (its built files, services/console) and `/`, which
 * sends browsers there. Public routes: the pages hold no data; everything they
 * show comes from the API with the session cookie. Every response under /ui
 * carries a strict Content-Security-Policy: scripts and styles from this origin
 * only, no inline script, no framing.
 */
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import { ApiError } from '../errors.ts';
import { loadAssets } from '../console/assets.ts';

/** The console's policy: the built files use no inline script or style element, and talk only to this origin. */
export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

function secure(reply: FastifyReply): FastifyReply {
  return reply
    .header('content-security-policy', CONSOLE_CSP)
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer')
    .header('x-frame-options', 'DENY');
}

const consoleRoutes: FastifyPluginAsync<{ dir: string }> = async (app, { dir }) => {
  const assets = loadAssets(dir);
  if (assets.size === 0) app.log.warn({ dir }, 'the console is not built: /ui answers 404 (run npm run build)');

  // Browsers asking for `/` get the console; API clients keep the JSON answer (where to look).
  app.get('/', { config: { public: true }, schema: { hide: true } }, async (req, reply) => {
    if ((req.headers.accept ?? '').includes('text/html')) return reply.redirect('/ui/', 302);
    return { name: 'heapcap', console: '/ui/', docs: '/docs', openapi: '/openapi.json' };
  });

  app.get('/ui', { config: { public: true }, schema: { hide: true } }, async (_req, reply) => secure(reply).redirect('/ui/', 301));

  app.get<{ Params: { '*': string } }>('/ui/*', { config: { public: true }, schema: { hide: true } }, async (req, reply) => {
    secure(reply);
    const path = req.params['*'] === '' ? 'index.html' : req.params['*'];
    const asset = assets.get(path);
    if (asset === undefined) {
      throw new ApiError('not_found', assets.size === 0 ? 'the console is not built: run `npm run build` (bin/heapcap builds it on first use)' : `no console file ${path}`);
    }
    reply.header('etag', asset.etag).header('cache-control', asset.immutable ? 'public, max-age=31536000, immutable' : 'no-cache').type(asset.type);
    if (req.headers['if-none-match'] === asset.etag) return reply.code(304).send();
    return reply.send(asset.body);
  });
};

export default consoleRoutes;
