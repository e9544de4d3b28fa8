/**
 * /v1/watch-rules: captures taken by themselves when a target's memory
 * climbs. Reading needs captures:read; anything that changes a rule needs
 * targets:admin (a rule captures every target it matches, on its own).
 * /v1/targets/:id/samples (captures:read): the watcher's samples of a target.
 */
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { errorResponses } from '../../schemas/common.ts';
import { LatestSamplesQuerySchema, LatestSamplesResponseSchema, ListWatchRulesResponseSchema, SamplesParamsSchema, SamplesQuerySchema, SamplesResponseSchema, WatchRuleBodySchema, WatchRuleParamsSchema, WatchRuleViewSchema } from '../../schemas/watch.ts';

const BODY_HELP =
  'Exactly one of `target` (an id) or `selector` (labels, resolved at each watch tick). `when`: `metric` (heapUsedRatio, heapUsedBytes, rssBytes, heapGrowthBytes with `windowSeconds`) ' +
  'above `above` for `forSeconds`. The rule fires once per episode: not again until the condition cleared and `cooldownSeconds` (default 1800) passed, and at most `maxPerDay` (default 4) times per target in any 24 hours. ' +
  'When the headroom gate refuses the snapshot it takes an allocation sampling profile instead (`capture.samplingSeconds`, default HEAPCAP_WATCH_SAMPLING_DURATION). ' +
  '400 `validation_failed` names the field: a ratio outside 0–1, bytes not above 0, forSeconds 0, a cooldown shorter than HEAPCAP_WATCH_INTERVAL, an unknown metric or target.';

const ruleId = { id: '$response.body#/rule/id' };
const RULE_LINKS = {
  GetWatchRule: { operationId: 'getWatchRule', parameters: ruleId },
  DeleteWatchRule: { operationId: 'deleteWatchRule', parameters: ruleId },
};

export const watchRulesRoutes: FastifyPluginAsyncZod = async (app) => {
  app.post(
    '',
    {
      config: { scope: 'targets:admin' },
      links: { 201: RULE_LINKS },
      schema: {
        operationId: 'createWatchRule',
        tags: ['watch'],
        summary: 'Create a watch rule (the watcher starts sampling its targets at its next tick)',
        description: BODY_HELP,
        body: WatchRuleBodySchema,
        response: { 201: WatchRuleViewSchema, ...errorResponses(400, 401, 403, 409, 413, 415, 429, 503) },
      },
    },
    async (req, reply) => reply.code(201).send(await app.watchRules.create(req, req.body)),
  );

  app.get(
    '',
    {
      config: { scope: 'captures:read' },
      schema: { operationId: 'listWatchRules', tags: ['watch'], summary: 'List watch rules with their state per target and last firing', response: { 200: ListWatchRulesResponseSchema, ...errorResponses(401, 403, 429, 503) } },
    },
    async () => ({ items: await app.watchRules.list() }),
  );

  app.get(
    '/:id',
    {
      config: { scope: 'captures:read' },
      schema: {
        operationId: 'getWatchRule',
        tags: ['watch'],
        summary: 'One watch rule: its state for each target (ok, pending, firing, cooling), the sampler of each, the last firing',
        params: WatchRuleParamsSchema,
        response: { 200: WatchRuleViewSchema, ...errorResponses(400, 401, 403, 404, 429, 503) },
      },
    },
    async (req) => app.watchRules.get(req.params.id),
  );

  app.put(
    '/:id',
    {
      config: { scope: 'targets:admin' },
      schema: {
        operationId: 'putWatchRule',
        tags: ['watch'],
        summary: 'Create or replace a watch rule (the states of its targets carry on)',
        description: BODY_HELP,
        params: WatchRuleParamsSchema,
        body: WatchRuleBodySchema,
        response: { 200: WatchRuleViewSchema, 201: WatchRuleViewSchema, ...errorResponses(400, 401, 403, 413, 415, 429, 503) },
      },
    },
    async (req, reply) => {
      const { view, created } = await app.watchRules.put(req, req.params.id, req.body);
      return reply.code(created ? 201 : 200).send(view);
    },
  );

  app.delete(
    '/:id',
    {
      config: { scope: 'targets:admin' },
      schema: {
        operationId: 'deleteWatchRule',
        tags: ['watch'],
        summary: 'Delete a watch rule (its captures stay)',
        params: WatchRuleParamsSchema,
        response: { 204: z.null().describe('deleted'), ...errorResponses(400, 401, 403, 404, 429, 503) },
      },
    },
    async (req, reply) => {
      await app.watchRules.remove(req, req.params.id);
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
        config: { scope: 'targets:admin' },
        schema: {
          operationId: `${action}WatchRule`,
          tags: ['watch'],
          summary: enabled ? 'Resume a paused watch rule' : 'Pause a watch rule (its targets are no longer sampled for it)',
          params: WatchRuleParamsSchema,
          response: { 200: WatchRuleViewSchema, ...errorResponses(400, 401, 403, 404, 429, 503) },
        },
      },
      async (req) => app.watchRules.setEnabled(req, req.params.id, enabled),
    );
  }
};

/** GET /v1/targets/:id/samples, GET /v1/targets/samples/latest. */
export const samplesRoutes: FastifyPluginAsyncZod = async (app) => {
  app.get(
    '/samples/latest',
    {
      config: { scope: 'captures:read' },
      schema: {
        operationId: 'getLatestTargetSamples',
        tags: ['watch'],
        summary: 'The newest samples of many targets in one request (a page of the console\'s targets view)',
        description:
          'For each of `ids` its newest `points` samples since `since` (default one hour ago), oldest first, read with one Redis round trip. ' +
          'A separate route rather than samples inside GET /v1/targets: the list stays one hash read for every caller, and a page asks only for the targets it shows. ' +
          'A target named `samples` is still GET /v1/targets/samples.',
        querystring: LatestSamplesQuerySchema,
        response: { 200: LatestSamplesResponseSchema, ...errorResponses(400, 401, 403, 429, 503) },
      },
    },
    async (req) => app.watchRules.latestSamples(req.query),
  );

  app.get(
    '/:id/samples',
    {
      config: { scope: 'captures:read' },
      schema: {
        operationId: 'getTargetSamples',
        tags: ['watch'],
        summary: "A watched target's memory samples between two times (the curve behind a watch firing: its trigger.samples.href)",
        params: SamplesParamsSchema,
        querystring: SamplesQuerySchema,
        response: { 200: SamplesResponseSchema, ...errorResponses(400, 401, 403, 404, 429, 503) },
      },
    },
    async (req) => app.watchRules.samples(req.params.id, req.query),
  );
};
