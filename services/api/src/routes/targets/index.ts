/**
 * /v1/targets: the registry, which is the allowlist of what can be captured
 * (no route takes a raw inspector URL). Reading needs captures:read, writing
 * targets:admin.
 */
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { TargetSchema } from '@heapcap/queue';
import { validationFailed } from '../../errors.ts';
import { errorResponses } from '../../schemas/common.ts';
import { ListTargetsResponseSchema, RegisteredTargetSchema, TargetParamsSchema } from '../../schemas/targets.ts';

const targetsRoutes: FastifyPluginAsyncZod = async (app) => {
  app.get(
    '',
    {
      config: { scope: 'captures:read' },
      schema: { tags: ['targets'], summary: 'List registered targets', response: { 200: ListTargetsResponseSchema, ...errorResponses(401, 403, 429, 503) } },
    },
    async () => ({ items: await app.targets.list() }),
  );

  app.get(
    '/:id',
    {
      config: { scope: 'captures:read' },
      schema: {
        tags: ['targets'],
        summary: 'One registered target',
        params: TargetParamsSchema,
        response: { 200: RegisteredTargetSchema, ...errorResponses(400, 401, 403, 404, 429, 503) },
      },
    },
    async (req) => app.targets.get(req.params.id),
  );

  app.post(
    '',
    {
      config: { scope: 'targets:admin' },
      schema: {
        tags: ['targets'],
        summary: 'Register a target',
        body: TargetSchema,
        response: { 201: RegisteredTargetSchema, ...errorResponses(400, 401, 403, 409, 413, 415, 429, 503) },
      },
    },
    async (req, reply) => reply.code(201).send(await app.targets.create(req, req.body)),
  );

  app.put(
    '/:id',
    {
      config: { scope: 'targets:admin' },
      schema: {
        tags: ['targets'],
        summary: 'Create or replace a target',
        params: TargetParamsSchema,
        body: TargetSchema,
        response: { 200: RegisteredTargetSchema, 201: RegisteredTargetSchema, ...errorResponses(400, 401, 403, 413, 415, 429, 503) },
      },
    },
    async (req, reply) => {
      if (req.body.id !== req.params.id) {
        throw validationFailed([{ in: 'body', path: 'id', message: `must equal the id in the URL (${req.params.id})` }]);
      }
      const { entry, created } = await app.targets.put(req, req.body);
      return reply.code(created ? 201 : 200).send(entry);
    },
  );

  app.delete(
    '/:id',
    {
      config: { scope: 'targets:admin' },
      schema: {
        tags: ['targets'],
        summary: 'Remove a target (queued captures of it then fail with target_not_found)',
        params: TargetParamsSchema,
        response: { 204: z.null().describe('removed'), ...errorResponses(400, 401, 403, 404, 429, 503) },
      },
    },
    async (req, reply) => {
      await app.targets.remove(req, req.params.id);
      return reply.code(204).send(null);
    },
  );
};

export default targetsRoutes;
