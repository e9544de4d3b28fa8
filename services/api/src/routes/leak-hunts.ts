/**
 * POST /v1/leak-hunts, GET /v1/leak-hunts (newest first), GET /v1/leak-hunts/:id: three captures of one target
 * `interval` seconds apart on one inspector session, then the classes whose
 * instances created between the first two still live in the third.
 */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { CreateLeakHuntBodySchema, LeakHuntListQuerySchema, LeakHuntListSchema, LeakHuntParamsSchema, LeakHuntResponseSchema } from '../schemas/analysis.ts';
import { errorResponses } from '../schemas/common.ts';

const leakHuntRoutes: FastifyPluginAsyncZod = async (app) => {
  app.post(
    '',
    {
      config: { scope: 'captures:write' },
      schema: {
        operationId: 'createLeakHunt',
        tags: ['captures'],
        summary: 'Hunt a leak: baseline, target and final snapshots `interval` seconds apart, then what survived',
        description:
          'A worker takes three snapshots of the target on one inspector session (V8 keeps object ids only while nothing clears them), ' +
          'holding the target lock throughout, and reports the classes whose instances created between the first two are still alive in the third, ' +
          'each with the retainer path of its largest instance. Objects allocated and freed in between are not named. Poll GET /v1/leak-hunts/{id}. Audited. ' +
          'With `drive` (targets:admin only; 403 forbidden otherwise) the worker drives the target right after the baseline: HTTP requests to the target\'s own host (409 drive_url_not_allowed for any other host, or a URL with credentials) or a Runtime expression.',
        body: CreateLeakHuntBodySchema,
        response: { 202: LeakHuntResponseSchema, ...errorResponses(400, 401, 403, 404, 409, 413, 415, 429, 503) },
      },
    },
    async (req, reply) => {
      const hunt = await app.heapAnalysis.createHunt(req, { targetId: req.body.target, intervalMs: req.body.interval * 1000, reason: req.body.reason, drive: req.body.drive, redact: req.body.redact, allocations: req.body.allocations });
      return reply.code(202).send({ hunt, report: null });
    },
  );

  app.get(
    '',
    {
      config: { scope: 'artifacts:read' },
      schema: {
        operationId: 'listLeakHunts',
        tags: ['captures'],
        summary: 'Leak hunts, newest first (of one target with `target`)',
        description: 'Each hunt\'s record: status, phase, snapshots so far and, once it succeeded, the classes it names (the report is on GET /v1/leak-hunts/{id}). Hunts are kept 30 days.',
        querystring: LeakHuntListQuerySchema,
        response: { 200: LeakHuntListSchema, ...errorResponses(400, 401, 403, 429, 503) },
      },
    },
    async (req) => ({ items: await app.heapAnalysis.hunts({ targetId: req.query.target, limit: req.query.limit }) }),
  );

  app.get(
    '/:id',
    {
      config: { scope: 'artifacts:read' },
      schema: {
        operationId: 'getLeakHunt',
        tags: ['captures'],
        summary: 'A leak hunt: its progress, and its report once it succeeded',
        description: '`hunt.status` queued / running (`hunt.phase` says which snapshot or wait), succeeded (`report`) or failed (`hunt.error`). Audited.',
        params: LeakHuntParamsSchema,
        response: { 200: LeakHuntResponseSchema, ...errorResponses(400, 401, 403, 404, 429, 503) },
      },
    },
    async (req) => app.heapAnalysis.hunt(req, req.params.id),
  );
};

export default leakHuntRoutes;
