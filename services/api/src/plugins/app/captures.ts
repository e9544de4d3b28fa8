/**
 * The captures service: trigger (create, coalesce, replay), read, list, wait,
 * cancel or delete. Wraps the queue with the API's audit trail and metrics;
 * routes call only this.
 */
import fp from 'fastify-plugin';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { z } from 'zod';
import type { CapturePage, CaptureRecord, HeapcapQueue, ListCapturesFilter, RequestCaptureResult } from '@heapcap/state';
import { ApiError } from '../../errors.ts';
import { principalOf } from '../infra/auth.ts';
import type { CreateCaptureBodySchema } from '../../schemas/captures.ts';
import type { ArtifactsService } from './artifacts.ts';
import { fromQueue } from './queue-errors.ts';

/** What DELETE did. */
export interface DeleteResult {
  record: CaptureRecord;
  result: 'cancelled' | 'cancelling' | 'artifact_deleted' | 'finished';
}

/** Capture operations for the routes. */
export interface CapturesService {
  /** Create, join or replay (Idempotency-Key) a capture for the caller of `req`; audited. */
  request(req: FastifyRequest, body: z.output<typeof CreateCaptureBodySchema>, idempotencyKey: string | undefined): Promise<RequestCaptureResult>;
  /** The record, or `not_found`. */
  get(id: string): Promise<CaptureRecord>;
  list(filter: ListCapturesFilter): Promise<CapturePage>;
  /** The record once terminal, or as it is after `timeoutMs` / when `signal` aborts. */
  wait(id: string, timeoutMs: number, signal: AbortSignal): Promise<CaptureRecord>;
  /** Cancel a queued/running capture, or delete the artifact of a finished one; audited. */
  remove(req: FastifyRequest, id: string): Promise<DeleteResult>;
}

function notFound(id: string): ApiError {
  return new ApiError('not_found', `no capture ${id}`, { captureId: id });
}

declare module 'fastify' {
  interface FastifyInstance {
    captures: CapturesService;
  }
}

const capturesPlugin: FastifyPluginAsync<{ queue: HeapcapQueue }> = async (app, { queue }) => {
  const artifacts = (): ArtifactsService => app.artifacts;

  const service: CapturesService = {
    async request(req, body, idempotencyKey) {
      const principal = principalOf(req);
      const result = await fromQueue(() =>
        queue.requestCapture({
          targetId: body.target,
          options: body.options,
          force: body.force,
          idempotencyKey,
          trigger: { kind: 'rest', who: principal.name, from: req.ip, reason: body.reason },
        }),
      );
      const outcome = result.created ? 'created' : result.coalesced ? 'coalesced' : 'replayed';
      app.metrics.requests.inc({ outcome });
      // After the fact, with the outcome: if this write fails the client gets a 503
      // and retries with its Idempotency-Key, which replays the same capture.
      await fromQueue(() =>
        app.audit.record(req, {
          action: 'capture.trigger',
          targetId: result.record.targetId,
          captureId: result.record.id,
          details: { outcome, force: body.force, reason: body.reason },
        }),
      );
      return result;
    },

    async get(id) {
      const record = await fromQueue(() => queue.readCapture(id));
      if (record === null) throw notFound(id);
      return record;
    },

    list(filter) {
      return fromQueue(() => queue.listCaptures(filter));
    },

    async wait(id, timeoutMs, signal) {
      const record = await fromQueue(() => queue.waitForCapture(id, timeoutMs, signal));
      if (record === null) throw notFound(id);
      return record;
    },

    async remove(req, id) {
      const cancel = await fromQueue(() => queue.cancelCapture(id));
      if (cancel.outcome === 'not_found' || cancel.record === null) throw notFound(id);
      const record = cancel.record;
      if (cancel.outcome === 'cancelled' || cancel.outcome === 'cancelling') {
        await fromQueue(() => app.audit.record(req, { action: 'capture.cancel', targetId: record.targetId, captureId: id, details: { outcome: cancel.outcome } }));
        return { record, result: cancel.outcome };
      }
      if (record.artifact === null) return { record, result: 'finished' };
      // Audit first: a deletion must never happen unrecorded.
      await fromQueue(() => app.audit.record(req, { action: 'capture.delete_artifact', targetId: record.targetId, captureId: id, details: { key: record.artifact?.key } }));
      await artifacts().remove(record);
      await fromQueue(() => queue.clearArtifact(id));
      return { record: { ...record, artifact: null }, result: 'artifact_deleted' };
    },
  };
  app.decorate('captures', service);
};

export default fp(capturesPlugin, { name: 'heapcap-captures', dependencies: ['heapcap-audit', 'heapcap-metrics', 'heapcap-artifacts'] });
