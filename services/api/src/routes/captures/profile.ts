/** GET /v1/captures/:id/profile: a sampling profile's live bytes by allocation site, or its pprof encoding. */
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { downloadFileName } from '@heapcap/storage';
import { CaptureParamsSchema } from '../../schemas/captures.ts';
import { ProfileQuerySchema, ProfileResponseSchema, ProfileTreeResponseSchema } from '../../schemas/profiles.ts';
import { validationFailed } from '../../errors.ts';
import { errorResponses } from '../../schemas/common.ts';

const profileRoutes: FastifyPluginAsyncZod = async (app) => {
  app.get(
    '/:id/profile',
    {
      config: { scope: 'artifacts:read' },
      schema: {
        operationId: 'getCaptureProfile',
        tags: ['captures'],
        summary: "A sampling profile's live bytes by allocation site, or the profile as gzipped pprof",
        description:
          '`format=summary` (default): the allocation sites (function, script, line, column of the function: V8 names functions, not statements), most live bytes first, ' +
          'with samples and estimated objects, and the top stacks; Node\'s own `node:` frames and builtins without a script are folded into their caller (docs/analysis.md, "Where it was allocated"). ' +
          '`format=pprof`: a gzipped pprof Profile (sample types inuse_objects and inuse_space; the same folded stacks) that `go tool pprof`, Pyroscope and Grafana read, ' +
          'named `<target>-<UTC time>-<id>.pb.gz`. The `.heapprofile` itself (DevTools) is GET /v1/captures/{id}/artifact. ' +
          '`format=tree`: the same folded call tree, flat (nodes in pre-order, each with its parent index, frame index and self/total bytes, samples and estimated objects), what the console draws as a flame graph; ' +
          'with `base=ID` (another sampling-profile capture of the target) the growth tree: each node also has the base side\'s bytes and samples. `base` without format=tree is 400 `validation_failed`. ' +
          '404 `profile_not_found` for a heap snapshot (no allocation profile); 409 `artifact_not_available` when the capture did not succeed or its artifact expired; ' +
          '409 `profile_too_large` above 256 MiB. Audited.',
        params: CaptureParamsSchema,
        querystring: ProfileQuerySchema,
        response: {
          200: {
            description: 'the summary (JSON), or with format=pprof the gzipped pprof bytes',
            content: {
              'application/json': { schema: z.union([ProfileResponseSchema, ProfileTreeResponseSchema]) },
              'application/octet-stream': { schema: z.unknown().describe('a gzipped pprof Profile (format=pprof)') },
            },
          },
          ...errorResponses(400, 401, 403, 404, 409, 429, 503),
        },
      },
    },
    async (req, reply) => {
      const record = await app.captures.get(req.params.id);
      const { format, base } = req.query;
      if (base !== undefined && format !== 'tree') {
        throw validationFailed([{ in: 'querystring', path: 'base', message: 'base (a growth tree) goes with format=tree only; drop it, or add format=tree' }]);
      }
      if (format === 'tree') {
        const baseRecord = base === undefined ? null : await app.captures.get(base);
        const force = req.query.force === 'true' || req.query.force === '1';
        const tree = baseRecord === null ? await app.profiles.tree(record) : await app.profiles.treeDiff(baseRecord, record, force);
        await app.audit.record(req, { action: 'profile.read', targetId: record.targetId, captureId: record.id, details: { format, ...(baseRecord === null ? {} : { base: baseRecord.id }) } });
        return reply.header('cache-control', 'no-store').send({ captureId: record.id, targetId: record.targetId, baseId: baseRecord?.id ?? null, tree });
      }
      if (format === 'pprof') {
        const bytes = await app.profiles.pprof(record);
        await app.audit.record(req, { action: 'profile.read', targetId: record.targetId, captureId: record.id, details: { format } });
        const name = downloadFileName({ id: record.id, targetId: record.targetId, createdAt: record.createdAt, kind: 'sampling-profile' }, false).replace(/\.heapprofile$/, '.pb.gz');
        // The profile names the target's code and scripts: never cache it.
        return reply.header('content-type', 'application/octet-stream').header('content-disposition', `attachment; filename="${name}"`).header('cache-control', 'no-store').send(bytes);
      }
      const profile = await app.profiles.summary(record, req.query.limit);
      await app.audit.record(req, { action: 'profile.read', targetId: record.targetId, captureId: record.id, details: { format } });
      return reply.header('cache-control', 'no-store').send({ captureId: record.id, targetId: record.targetId, profile });
    },
  );
};

export default profileRoutes;
