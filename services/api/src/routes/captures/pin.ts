/** POST|DELETE /v1/captures/:id/pin: a pinned capture is never deleted by retention. */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { CaptureParamsSchema } from '../../schemas/captures.ts';
import { errorResponses } from '../../schemas/common.ts';
import { PinBodySchema, PinResponseSchema } from '../../schemas/schedules.ts';

const pinRoutes: FastifyPluginAsyncZod = async (app) => {
  app.post(
    '/:id/pin',
    {
      config: { scope: 'captures:write' },
      schema: {
        tags: ['captures'],
        operationId: 'pinCapture',
        summary: 'Pin a capture: retention never deletes its artifact, nor the record TTL its record',
        description: '409 `artifact_not_available` when retention already deleted the artifact; 409 `conflict` while it is deleting it.',
        params: CaptureParamsSchema,
        body: PinBodySchema,
        response: { 200: PinResponseSchema, ...errorResponses(400, 401, 403, 404, 409, 413, 415, 429, 503) },
      },
    },
    async (req) => ({ capture: await app.pins.set(req, req.params.id, true, req.body?.reason) }),
  );

  app.delete(
    '/:id/pin',
    {
      config: { scope: 'captures:write' },
      schema: {
        tags: ['captures'],
        operationId: 'unpinCapture',
        summary: 'Unpin a capture: retention applies to it again',
        params: CaptureParamsSchema,
        response: { 200: PinResponseSchema, ...errorResponses(400, 401, 403, 404, 429, 503) },
      },
    },
    async (req) => ({ capture: await app.pins.set(req, req.params.id, false, undefined) }),
  );
};

export default pinRoutes;
