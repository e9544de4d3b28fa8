/**
 * /v1/schedules: periodic captures of one target or a label group. Reading
 * needs captures:read; creating captures:write; changing, pausing, resuming
 * or deleting a schedule needs captures:write and to own it, or targets:admin.
 */
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { errorResponses } from '../../schemas/common.ts';
import { ListSchedulesResponseSchema, ScheduleBodySchema, ScheduleParamsSchema, ScheduleViewSchema } from '../../schemas/schedules.ts';

const BODY_HELP =
  'Exactly one of `target` (an id) or `selector` (labels, resolved at each run), and one of `every` ("90s", "15m", "6h") or `cron` (5 fields, with `timezone`). ' +
  'A group\'s captures are spread over the interval, at most `maxConcurrent` (default 1) in flight. 400 `validation_failed` names the field: a cron that does not parse, ' +
  'an interval below HEAPCAP_SCHEDULE_MIN_INTERVAL, retention.keepLast 0, an unknown target, a selector matching no target.';

const scheduleId = { id: '$response.body#/schedule/id' };
/** OpenAPI links from a created schedule to its routes. */
const SCHEDULE_LINKS = {
  GetSchedule: { operationId: 'getSchedule', parameters: scheduleId },
  DeleteSchedule: { operationId: 'deleteSchedule', parameters: scheduleId },
  PauseSchedule: { operationId: 'pauseSchedule', parameters: scheduleId },
  ResumeSchedule: { operationId: 'resumeSchedule', parameters: scheduleId },
};

const schedulesRoutes: FastifyPluginAsyncZod = async (app) => {
  app.post(
    '',
    {
      config: { scope: 'captures:write' },
      links: { 201: SCHEDULE_LINKS },
      schema: {
        operationId: 'createSchedule',
        tags: ['schedules'],
        summary: 'Create a schedule (its first run is right away for `every`, at the next match for `cron`)',
        description: BODY_HELP,
        body: ScheduleBodySchema,
        response: { 201: ScheduleViewSchema, ...errorResponses(400, 401, 403, 409, 413, 415, 429, 503) },
      },
    },
    async (req, reply) => reply.code(201).send(await app.schedules.create(req, req.body)),
  );

  app.get(
    '',
    {
      config: { scope: 'captures:read' },
      schema: { operationId: 'listSchedules', tags: ['schedules'], summary: 'List schedules with their next runs and last turn', response: { 200: ListSchedulesResponseSchema, ...errorResponses(401, 403, 429, 503) } },
    },
    async () => ({ items: await app.schedules.list() }),
  );

  app.get(
    '/:id',
    {
      config: { scope: 'captures:read' },
      schema: {
        operationId: 'getSchedule',
        tags: ['schedules'],
        summary: 'One schedule: next three runs, last turn, last capture and its status',
        params: ScheduleParamsSchema,
        response: { 200: ScheduleViewSchema, ...errorResponses(400, 401, 403, 404, 429, 503) },
      },
    },
    async (req) => app.schedules.get(req.params.id),
  );

  app.put(
    '/:id',
    {
      config: { scope: 'captures:write' },
      schema: {
        operationId: 'putSchedule',
        tags: ['schedules'],
        summary: 'Create or replace a schedule (the same job scheduler is updated, never a second one added)',
        description: BODY_HELP,
        params: ScheduleParamsSchema,
        body: ScheduleBodySchema,
        response: { 200: ScheduleViewSchema, 201: ScheduleViewSchema, ...errorResponses(400, 401, 403, 413, 415, 429, 503) },
      },
    },
    async (req, reply) => {
      const { view, created } = await app.schedules.put(req, req.params.id, req.body);
      return reply.code(created ? 201 : 200).send(view);
    },
  );

  app.delete(
    '/:id',
    {
      config: { scope: 'captures:write' },
      schema: {
        operationId: 'deleteSchedule',
        tags: ['schedules'],
        summary: 'Delete a schedule (its captures stay, under the default retention)',
        params: ScheduleParamsSchema,
        response: { 204: z.null().describe('deleted'), ...errorResponses(400, 401, 403, 404, 429, 503) },
      },
    },
    async (req, reply) => {
      await app.schedules.remove(req, req.params.id);
      return reply.code(204).send(null);
    },
  );

  for (const [action, enabled] of [
    ['pause', false],
    ['resume', true],
  ] as const) {
    app.post(
      `/:id/${action}`,
      {
        config: { scope: 'captures:write' },
        schema: {
          operationId: `${action}Schedule`,
          tags: ['schedules'],
          summary: enabled ? 'Resume a paused schedule (an `every` schedule runs right away)' : 'Pause a schedule (no run until resumed)',
          params: ScheduleParamsSchema,
          response: { 200: ScheduleViewSchema, ...errorResponses(400, 401, 403, 404, 429, 503) },
        },
      },
      async (req) => app.schedules.setEnabled(req, req.params.id, enabled),
    );
  }
};

export default schedulesRoutes;
