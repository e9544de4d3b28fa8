/** GET /v1/diff?base=ID&head=ID: what grew between two captures, from their summaries. */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { DiffQuerySchema, DiffResponseSchema } from '../schemas/analysis.ts';
import { errorResponses } from '../schemas/common.ts';

const diffRoutes: FastifyPluginAsyncZod = async (app) => {
  app.get(
    '',
    {
      config: { scope: 'artifacts:read' },
      schema: {
        operationId: 'diffCaptures',
        tags: ['captures'],
        summary: 'Leak suspects, then per-class growth, between two captures',
        description:
          '`diff.suspects` first: the few owners of new memory (strings, fields and engine internals folded into the object that holds them), ' +
          'each with its holder, count delta, self and retained growth, a retainer path and a one-line reason (docs/analysis.md). ' +
          'They need both captures\' analyses: without them `diff.suspects.mode` is `summary` (classes only, application classes first, no holders), ' +
          '`diff.suspects.note` says why; this GET never waits for nor starts an analysis: ' +
          'POST `/v1/captures/{id}/analysis` for a side whose `analysis.status` is `none`, poll `analysis.poll`, and ask again. Then, from the two captures\' summaries: per class, both sides\' count and self size, `countDelta`, `selfSizeDelta`, and `status` ' +
          '(`new`, `vanished`, `grown`, `shrunk`, `unchanged`); `retainedSizeDelta` too when both captures have a succeeded analysis. ' +
          'The first `limit` classes are answered (default 100), the rest counted in `omittedClasses`. ' +
          '409 `target_mismatch` for captures of two targets unless `force=true`; 404 `not_found` for an unknown id, `summary_missing` for a capture without a summary; ' +
          '409 `artifact_not_available` for a capture that did not succeed; 409 `not_a_snapshot` when one side is an allocation sampling profile and the other a snapshot. ' +
          'When both captures are allocation sampling profiles, `diff` is null and `allocations` holds the growth by allocation site: `grown` (most live-byte growth first) and `shrunk`, ' +
          'each site with both sides\' live bytes and samples and `bytesDelta` (at most `limit`; docs/analysis.md, "Where it was allocated"). ' +
          'Two snapshots that each have a continuous allocation profile stored beside them (`profileCaptureId`; docs/watch.md) answer the same `allocations` between those two profiles beside `diff`; `allocations` is null otherwise. ' +
          'Then a suspect whose class a grown site constructs (a frame of the class\'s name in that site\'s grown stacks: its constructor) names it: the part\'s `allocatedAt` with `source: sampled` and the suspect\'s `allocated` line; ' +
          'a constructor V8 inlined, or a class without one, has no frame of its name, and names nothing (docs/analysis.md). Audited.',
        querystring: DiffQuerySchema,
        response: { 200: DiffResponseSchema, ...errorResponses(400, 401, 403, 404, 409, 429, 503) },
      },
    },
    async (req) => {
      const { base: baseId, head: headId, limit } = req.query;
      const force = req.query.force === 'true' || req.query.force === '1';
      const [base, head] = [await app.captures.get(baseId), await app.captures.get(headId)];
      if (app.profiles.has(base) && app.profiles.has(head)) {
        const result = await app.profiles.diff(base, head, force, limit);
        await app.audit.record(req, { action: 'capture.diff', targetId: head.targetId, captureId: head.id, details: { base: base.id, forced: result.forced, allocations: true } });
        return { ...result, omittedClasses: 0, diff: null };
      }
      const result = await app.heapAnalysis.diff(base, head, force);
      await app.audit.record(req, { action: 'capture.diff', targetId: head.targetId, captureId: head.id, details: { base: base.id, forced: result.forced } });
      const { classes } = result.diff;
      // Two snapshots with a continuous profile stored beside each: the growth by allocation site between those,
      // and the suspects whose class a grown site constructs name it.
      const beside = await app.profiles.beside(base, head, limit, result.diff.suspects);
      const diff = { ...result.diff, classes: classes.slice(0, limit), suspects: beside?.suspects ?? result.diff.suspects };
      return { ...result, omittedClasses: Math.max(0, classes.length - limit), diff, allocations: beside?.allocations ?? null };
    },
  );
};

export default diffRoutes;
