/**
 * GET /metrics: Prometheus exposition. Public by default, like the probes: it
 * holds no capture data, but its heapcap_target_* series name every
 * registered target, so HEAPCAP_METRICS_AUTH=token makes it need a token with
 * captures:read (the scope that lists targets anyway).
 */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';

const metricsRoutes: FastifyPluginAsyncZod<{ auth: 'none' | 'token' }> = async (app, { auth }) => {
  app.get('/metrics', { config: auth === 'token' ? { scope: 'captures:read' } : { public: true }, schema: { hide: true } }, async (_req, reply) => {
    const { contentType, body } = await app.metrics.render();
    return reply.type(contentType).send(body);
  });
};

export default metricsRoutes;
