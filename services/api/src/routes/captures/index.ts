/** /v1/captures: trigger, list, read, cancel/delete. The artifact route is in artifact.ts. */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { isTerminal } from '@heapcap/state';
import {
  CaptureParamsSchema,
  CaptureResponseSchema,
  CreateCaptureBodySchema,
  CreateCaptureHeadersSchema,
  CreateCaptureQuerySchema,
  DeleteCaptureResponseSchema,
  ListCapturesQuerySchema,
  ListCapturesResponseSchema,
} from '../../schemas/captures.ts';
import { errorResponses } from '../../schemas/common.ts';
import { abortOnClientGone } from './client-gone.ts';
import { captureLinks } from './links.ts';

const captureId = { id: '$response.body#/capture/id' };
/** OpenAPI links from a trigger's answer to what can be done with the capture (clients and schemathesis' stateful phase follow them). */
const CAPTURE_LINKS = {
  GetCapture: { operationId: 'getCapture', parameters: captureId },
  GetArtifact: { operationId: 'getArtifact', parameters: captureId },
  DeleteCapture: { operationId: 'deleteCapture', parameters: captureId },
};

const capturesRoutes: FastifyPluginAsyncZod = async (app) => {
  app.post(
    '',
    {
      config: { scope: 'captures:write' },
      links: { 200: CAPTURE_LINKS, 202: CAPTURE_LINKS },
      schema: {
        operationId: 'createCapture',
        tags: ['captures'],
        summary: 'Trigger a capture (or join the one already queued or running for the target)',
        description:
          '202: a new capture was queued. 200: joined a queued/running capture of the same target (`coalesced: true`) or replayed an Idempotency-Key (`replayed: true`). ' +
          'With `?wait=SECONDS`: 200 with the final record, or 202 if it is still running at the deadline.',
        body: CreateCaptureBodySchema,
        querystring: CreateCaptureQuerySchema,
        headers: CreateCaptureHeadersSchema,
        response: { 200: CaptureResponseSchema, 202: CaptureResponseSchema, ...errorResponses(400, 401, 403, 404, 413, 415, 422, 429, 503) },
      },
    },
    async (req, reply) => {
      const result = await app.captures.request(req, req.body, req.headers['idempotency-key']);
      let record = result.record;
      let status: 200 | 202 = result.created ? 202 : 200;
      const wait = req.query.wait;
      if (wait !== undefined && wait > 0 && !isTerminal(record)) {
        record = await app.captures.wait(record.id, wait * 1000, abortOnClientGone(reply));
        status = isTerminal(record) ? 200 : 202;
      }
      return reply.code(status).send({ capture: record, coalesced: result.coalesced, replayed: result.replayed, links: captureLinks(record) });
    },
  );

  app.get(
    '',
    {
      config: { scope: 'captures:read' },
      schema: {
        tags: ['captures'],
        operationId: 'listCaptures',
        summary: 'List captures, newest first',
        querystring: ListCapturesQuerySchema,
        response: { 200: ListCapturesResponseSchema, ...errorResponses(400, 401, 403, 429, 503) },
      },
    },
    async (req) => {
      const q = req.query;
      return app.captures.list({
        targetId: q.target,
        status: q.status,
        triggerKind: q.trigger,
        kind: q.kind,
        from: q.since === undefined ? undefined : new Date(q.since),
        to: q.until === undefined ? undefined : new Date(q.until),
        limit: q.limit,
        cursor: q.cursor,
      });
    },
  );

  app.get(
    '/:id',
    {
      config: { scope: 'captures:read' },
      schema: {
        tags: ['captures'],
        operationId: 'getCapture',
        summary: 'One capture record, with phase timings',
        params: CaptureParamsSchema,
        response: { 200: CaptureResponseSchema, ...errorResponses(400, 401, 403, 404, 429, 503) },
      },
    },
    async (req) => {
      const record = await app.captures.get(req.params.id);
      return { capture: record, coalesced: false, replayed: false, links: captureLinks(record) };
    },
  );

  app.delete(
    '/:id',
    {
      config: { scope: 'captures:write' },
      schema: {
        tags: ['captures'],
        operationId: 'deleteCapture',
        summary: 'Cancel a queued or running capture; delete the artifact of a finished one',
        description: '200: cancelled, artifact deleted, or nothing to do. 202: running; its worker is stopping it (poll the record).',
        params: CaptureParamsSchema,
        response: { 200: DeleteCaptureResponseSchema, 202: DeleteCaptureResponseSchema, ...errorResponses(400, 401, 403, 404, 429, 503) },
      },
    },
    async (req, reply) => {
      const { record, result } = await app.captures.remove(req, req.params.id);
      return reply.code(result === 'cancelling' ? 202 : 200).send({ capture: record, result });
    },
  );
};

export default capturesRoutes;
