/** GET /metrics: Prometheus exposition (public, like the probes: no capture data in it). */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';

const metricsRoutes: FastifyPluginAsyncZod = async (app) => {
  app.get('/metrics', { config: { public: true }, schema: { hide: true } }, async (_req, reply) => {
    const { contentType, body } = await app.metrics.render();
    return reply.type(contentType).send(body);
  });
};

export default metricsRoutes;
