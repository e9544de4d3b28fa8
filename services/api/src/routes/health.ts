/** Liveness (`/healthz`: the process answers) and readiness (`/readyz`: Redis, the registry and storage). */
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { ApiError } from '../errors.ts';
import { sendError } from '../plugins/infra/error-handler.ts';
import { errorResponses } from '../schemas/common.ts';

const CheckState = z.enum(['ok', 'unavailable']);

const healthRoutes: FastifyPluginAsyncZod = async (app) => {
  app.get(
    '/healthz',
    {
      config: { public: true },
      schema: { operationId: 'healthz', tags: ['health'], summary: 'The process is up', security: [], response: { 200: z.object({ status: z.literal('ok') }) } },
    },
    () => ({ status: 'ok' as const }),
  );

  app.get(
    '/readyz',
    {
      config: { public: true },
      schema: {
        operationId: 'readyz',
        tags: ['health'],
        summary: 'Redis answers, the target registry is loaded and artifact storage is reachable',
        security: [],
        response: {
          200: z.object({
            status: z.literal('ready'),
            checks: z.object({ redis: CheckState, registry: CheckState, storage: CheckState }),
            redisDataLoss: z.object({ at: z.string(), lost: z.array(z.string()), recreated: z.array(z.string()), orphansSwept: z.object({ at: z.string(), adopted: z.number().int() }).optional() }).optional().describe('the last time heapcap found Redis had lost its data (restart without persistence, failover, FLUSHALL)'),
          }),
          ...errorResponses(503),
        },
      },
    },
    async (_req, reply) => {
      const r = await app.readiness.check();
      if (!r.ready) {
        // Which dependency is down is operational, not secret: the probe's reader needs it.
        return sendError(reply, new ApiError('unavailable', 'not ready: a dependency is unreachable', { checks: r.checks, ...(r.reasons === undefined ? {} : { reasons: r.reasons }), ...(r.redisDataLoss === undefined ? {} : { redisDataLoss: r.redisDataLoss }) }));
      }
      return { status: 'ready' as const, checks: r.checks, ...(r.redisDataLoss === undefined ? {} : { redisDataLoss: r.redisDataLoss }) };
    },
  );
};

export default healthRoutes;
