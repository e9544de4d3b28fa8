/** GET /v1/captures/:id/artifact: the snapshot (decompressed, or gzip), or a redirect to a presigned URL. */
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { ArtifactQuerySchema, CaptureParamsSchema } from '../../schemas/captures.ts';
import { errorResponses } from '../../schemas/common.ts';

const artifactRoutes: FastifyPluginAsyncZod = async (app) => {
  app.get(
    '/:id/artifact',
    {
      config: { scope: 'artifacts:read' },
      schema: {
        operationId: 'getArtifact',
        tags: ['captures'],
        summary: 'Download the heap snapshot of a succeeded capture',
        description:
          'Streams the snapshot JSON (gunzipped on the fly). `?encoding=gzip` streams the stored .gz bytes. ' +
          '`?redirect=1` answers 302 to a presigned URL when storage is S3 (streams otherwise). Every download is audited.',
        params: CaptureParamsSchema,
        querystring: ArtifactQuerySchema,
        response: {
          200: {
            description: 'the snapshot: JSON by default, the stored gzip bytes with ?encoding=gzip',
            content: {
              'application/json': { schema: z.unknown().describe('the heap snapshot JSON (gunzipped on the fly)') },
              'application/gzip': { schema: z.unknown().describe('the stored .heapsnapshot.gz bytes (?encoding=gzip)') },
            },
          },
          302: z.null().describe('redirect to a presigned URL'),
          ...errorResponses(400, 401, 403, 404, 409, 429, 503),
        },
      },
    },
    async (req, reply) => {
      const record = await app.captures.get(req.params.id);
      const redirect = req.query.redirect === '1' || req.query.redirect === 'true';
      const download = await app.artifacts.open(req, record, { gzip: req.query.encoding === 'gzip', redirect });
      if (download.kind === 'redirect') return reply.redirect(download.url, 302);
      reply.header('content-type', download.contentType);
      reply.header('content-disposition', `attachment; filename="${download.filename}"`);
      // The snapshot holds whatever the target held (tokens, personal data): never cache it.
      reply.header('cache-control', 'no-store');
      if (download.length !== undefined) reply.header('content-length', String(download.length));
      // Streams bypass the serializer; Fastify destroys the stream if the client goes away.
      return reply.send(download.stream);
    },
  );
};

export default artifactRoutes;
