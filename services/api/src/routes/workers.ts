/** /v1/workers: the live capture workers, from their heartbeats (captures:read). */
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { WorkerInfoSchema } from '@heapcap/state';
import { errorResponses } from '../schemas/common.ts';

const ListWorkersResponseSchema = z.object({ items: z.array(WorkerInfoSchema) }).describe('WorkerList');

const workersRoutes: FastifyPluginAsyncZod = async (app) => {
  app.get(
    '',
    {
      config: { scope: 'captures:read' },
      schema: {
        operationId: 'listWorkers',
        tags: ['workers'],
        summary: 'List live capture workers',
        description:
          'Workers announce themselves every few seconds (id, placements, version, captures in flight); one that stopped beating for three periods is gone. ' +
          'A placed target whose placement no worker here consumes fails with `no_worker_for_target`.',
        response: { 200: ListWorkersResponseSchema, ...errorResponses(401, 403, 429, 503) },
      },
    },
    async () => ({ items: await app.workers.list() }),
  );
};

export default workersRoutes;
