/**
 * OpenAPI document generated from the routes' zod schemas (`GET /openapi.json`)
 * and Swagger UI at `/docs`. Both are public: they describe the API, not data.
 */
import fp from 'fastify-plugin';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyPluginAsync } from 'fastify';
import { jsonSchemaTransform } from 'fastify-type-provider-zod';

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
    transform: jsonSchemaTransform,
  });
  // Swagger UI registers its own routes: mark them public from an enclosing context.
  await app.register(async (docs) => {
    docs.addHook('onRoute', (route) => {
      route.config = { ...route.config, public: true };
    });
    await docs.register(swaggerUi, { routePrefix: '/docs' });
  });
  app.get('/openapi.json', { config: { public: true }, schema: { hide: true } }, () => app.swagger());
};

export default fp(openapiPlugin, { name: 'heapcap-openapi' });
