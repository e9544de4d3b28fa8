/**
 * /v1/targets: the registry, which is the allowlist of what can be captured
 * (no route takes a raw inspector URL). Reading needs captures:read, writing
 * targets:admin.
 */
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { TargetSchema } from '@heapcap/state';
import { validationFailed } from '../../errors.ts';
import { principalOf } from '../../plugins/infra/auth.ts';
import { targetView } from '../../plugins/app/target-view.ts';
import { errorResponses } from '../../schemas/common.ts';
import { ListTargetsResponseSchema, RegisteredTargetSchema, TargetParamsSchema } from '../../schemas/targets.ts';

const REDACTION =
  'A node target\'s `ws` URL is shown whole only to tokens with targets:admin; others see `ws://HOST:PORT/…` (no user info, path or query: the path holds the inspector session id).';

const TARGET_RULES =
  'A `node` target has exactly one of `inspect` (HOST:PORT) and `ws` (a ws:// or wss:// URL); ports are 1–65535; ' +
  'Chromium `select` patterns must be valid JavaScript regular expressions; text is well-formed Unicode. ' +
  'The targets file is checked by the same schema.';

const targetId = { id: '$response.body#/target/id' };
/** OpenAPI links from a registration to the entry's routes (PUT replays the registered target: its id matches the URL). */
const TARGET_LINKS = {
  GetTarget: { operationId: 'getTarget', parameters: targetId },
  PutTarget: { operationId: 'putTarget', parameters: targetId, requestBody: '$response.body#/target' },
  DeleteTarget: { operationId: 'deleteTarget', parameters: targetId },
  CreateCapture: { operationId: 'createCapture', requestBody: { target: '$response.body#/target/id' } },
};

const targetsRoutes: FastifyPluginAsyncZod = async (app) => {
  app.get(
    '',
    {
      config: { scope: 'captures:read' },
      schema: {
        operationId: 'listTargets',
        tags: ['targets'],
        summary: 'List registered targets',
        description: REDACTION,
        response: { 200: ListTargetsResponseSchema, ...errorResponses(401, 403, 429, 503) },
      },
    },
    async (req) => ({ items: (await app.targets.list()).map((e) => targetView(e, principalOf(req))) }),
  );

  app.get(
    '/:id',
    {
      config: { scope: 'captures:read' },
      schema: {
        tags: ['targets'],
        operationId: 'getTarget',
        summary: 'One registered target',
        description: REDACTION,
        params: TargetParamsSchema,
        response: { 200: RegisteredTargetSchema, ...errorResponses(400, 401, 403, 404, 409, 429, 503) },
      },
    },
    async (req) => targetView(await app.targets.get(req.params.id), principalOf(req)),
  );

  app.post(
    '',
    {
      config: { scope: 'targets:admin' },
      links: { 201: TARGET_LINKS },
      schema: {
        operationId: 'createTarget',
        tags: ['targets'],
        summary: 'Register a target',
        description: TARGET_RULES,
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
        operationId: 'putTarget',
        summary: 'Create or replace a target',
        description: `${TARGET_RULES} The body's \`id\` must equal the \`id\` in the URL (else 400 \`validation_failed\` naming \`body.id\`).`,
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
        operationId: 'deleteTarget',
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
