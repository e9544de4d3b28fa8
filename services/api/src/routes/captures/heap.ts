/**
 * What a capture holds: GET /v1/captures/:id/summary (written while the
 * capture streamed), POST|GET /v1/captures/:id/analysis (retained sizes, a
 * job on the queue). Every read is audited like a download.
 */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { ApiError } from '../../errors.ts';
import { CaptureParamsSchema } from '../../schemas/captures.ts';
import { AnalysisResponseSchema, SummaryResponseSchema } from '../../schemas/analysis.ts';
import { errorResponses } from '../../schemas/common.ts';

const heapRoutes: FastifyPluginAsyncZod = async (app) => {
  app.get(
    '/:id/summary',
    {
      config: { scope: 'artifacts:read' },
      schema: {
        operationId: 'getCaptureSummary',
        tags: ['captures'],
        summary: "A capture's summary: node and edge counts, and count and self size per class",
        description:
          'Written beside the snapshot while it streamed (`<captureId>.summary.json`; docs/analysis.md explains the classes). ' +
          '404 `summary_missing` when the capture has none (taken before summaries existed, or its summary failed: `artifact.summaryError` says why); ' +
          '409 `artifact_not_available` when the capture did not succeed or its artifact expired; 409 `not_a_snapshot` for an allocation sampling profile (`artifact.kind` `sampling-profile`), which has no summary. Audited.',
        params: CaptureParamsSchema,
        response: { 200: SummaryResponseSchema, ...errorResponses(400, 401, 403, 404, 409, 429, 503) },
      },
    },
    async (req) => {
      const record = await app.captures.get(req.params.id);
      const summary = await app.heapAnalysis.summary(record);
      await app.audit.record(req, { action: 'summary.read', targetId: record.targetId, captureId: record.id });
      return { captureId: record.id, targetId: record.targetId, summary };
    },
  );

  app.post(
    '/:id/analysis',
    {
      config: { scope: 'captures:write' },
      schema: {
        operationId: 'requestCaptureAnalysis',
        tags: ['captures'],
        summary: 'Compute retained sizes and the largest dominators of a capture (a job for the worker)',
        description:
          '202: an analysis job was queued; 200: one was already queued or running (this request joined it). ' +
          'Poll GET /v1/captures/{id}/analysis. The worker refuses snapshots above HEAPCAP_ANALYSIS_MAX_BYTES with `analysis_too_large` ' +
          '(in `state.error`) before loading them. 409 `artifact_not_available` when there is no artifact to analyse; 409 `not_a_snapshot` for a sampling profile.',
        params: CaptureParamsSchema,
        response: { 200: AnalysisResponseSchema, 202: AnalysisResponseSchema, ...errorResponses(400, 401, 403, 404, 409, 429, 503) },
      },
    },
    async (req, reply) => {
      const { outcome, record } = await app.heapAnalysis.requestAnalysis(req, req.params.id);
      const state = record.analysis;
      if (state === undefined) throw new ApiError('internal', 'the analysis request left no state');
      return reply.code(outcome === 'queued' ? 202 : 200).send({ capture: record, state, analysis: null });
    },
  );

  app.get(
    '/:id/analysis',
    {
      config: { scope: 'artifacts:read' },
      schema: {
        operationId: 'getCaptureAnalysis',
        tags: ['captures'],
        summary: "A capture's retained-size analysis, or the state of its job",
        description:
          '`state.status` queued or running: poll again; succeeded: `analysis` holds retained sizes per class and the 20 largest dominators with their retainer paths; ' +
          'failed: `state.error` (e.g. `analysis_too_large`, `snapshot_invalid`). 404 `analysis_missing` when none was asked for. Audited.',
        params: CaptureParamsSchema,
        response: { 200: AnalysisResponseSchema, ...errorResponses(400, 401, 403, 404, 429, 503) },
      },
    },
    async (req) => {
      const record = await app.captures.get(req.params.id);
      const state = record.analysis;
      if (state === undefined) {
        throw new ApiError('analysis_missing', `capture ${record.id} has not been analysed: POST /v1/captures/${record.id}/analysis first`, { captureId: record.id });
      }
      const analysis = await app.heapAnalysis.analysis(record);
      await app.audit.record(req, { action: 'analysis.read', targetId: record.targetId, captureId: record.id, details: { status: state.status } });
      return { capture: record, state, analysis };
    },
  );
};

export default heapRoutes;
