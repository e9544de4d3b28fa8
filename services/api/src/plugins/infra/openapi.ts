/**
 * OpenAPI document generated from the routes' zod schemas (`GET /openapi.json`)
 * and Swagger UI at `/docs`. Both are public: they describe the API, not data.
 */
import fp from 'fastify-plugin';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyPluginAsync } from 'fastify';
import { fileURLToPath } from 'node:url';
import { optionalNullableBodies, transformWithContent } from './openapi-content.ts';

/** Set to true by the bundler (scripts/build.mjs); undefined when the sources run through tsx. */
declare const HEAPCAP_BUNDLED: boolean | undefined;

/**
 * Where Swagger UI's static files are: inside the bundle, dist/static beside
 * this chunk (the build copies them there: the package's own directory does not
 * exist in a shipped image); from the sources, the package's default.
 */
function swaggerAssets(): { baseDir?: string } {
  return typeof HEAPCAP_BUNDLED !== 'undefined' && HEAPCAP_BUNDLED ? { baseDir: fileURLToPath(new URL('./static/', import.meta.url)) } : {};
}

const openapiPlugin: FastifyPluginAsync<{ version: string }> = async (app, { version }) => {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'heapcap API',
        description: 'Trigger, list and download V8 heap snapshots of registered Node.js and Chromium targets.',
        version,
      },
      components: {
        securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'A token from the tokens file' } },
      },
      security: [{ bearer: [] }],
    },
    transform: transformWithContent,
    transformObject: (d) => optionalNullableBodies('openapiObject' in d ? d.openapiObject : d.swaggerObject),
  });
  // Swagger UI registers its own routes: mark them public from an enclosing context.
  await app.register(async (docs) => {
    docs.addHook('onRoute', (route) => {
      route.config = { ...route.config, public: true };
    });
    // A policy on every Swagger UI response (it sent none): its own scripts only, and never framed, since the
    // session cookie reaches /docs too (clickjacking). Swagger UI's policy, with frame-ancestors 'self' made 'none'
    // and without upgrade-insecure-requests (it would break a plain-HTTP deployment's page).
    docs.addHook('onSend', async (_req, reply) => {
      reply.header('x-frame-options', 'DENY').header('x-content-type-options', 'nosniff');
    });
    await docs.register(swaggerUi, {
      routePrefix: '/docs',
      staticCSP: true,
      transformStaticCSP: (header: string) => header.replace("frame-ancestors 'self'", "frame-ancestors 'none'").replace(/\s*upgrade-insecure-requests;?/, ''),
      ...swaggerAssets(),
    });
  });
  app.get('/openapi.json', { config: { public: true }, schema: { hide: true } }, () => app.swagger());
};

export default fp(openapiPlugin, { name: 'heapcap-openapi' });
