/** Pins: keep a capture from retention (POST) or let retention have it again (DELETE); audited. */
import fp from 'fastify-plugin';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { CaptureRecord, HeapcapQueue } from '@heapcap/state';
import { ApiError } from '../../errors.ts';
import { principalOf } from '../infra/auth.ts';
import { fromQueue } from './queue-errors.ts';

/** Pin operations for the routes. */
export interface PinsService {
  /** Pin (`pin: true`) or unpin; `not_found`, or 409 when retention already deleted (or is deleting) the artifact. */
  set(req: FastifyRequest, id: string, pin: boolean, reason: string | undefined): Promise<CaptureRecord>;
}

declare module 'fastify' {
  interface FastifyInstance {
    pins: PinsService;
  }
}

const pinsPlugin: FastifyPluginAsync<{ queue: HeapcapQueue }> = async (app, { queue }) => {
  app.decorate('pins', {
    async set(req, id, pin, reason) {
      const before = await fromQueue(() => queue.getCapture(id));
      if (before === null) throw new ApiError('not_found', `no capture ${id}`, { captureId: id });
      await fromQueue(() => app.audit.record(req, { action: pin ? 'capture.pin' : 'capture.unpin', targetId: before.targetId, captureId: id, details: reason === undefined ? undefined : { reason } }));
      const { outcome, record } = await fromQueue(() => queue.setPin(id, pin, principalOf(req).name, reason));
      if (outcome === 'not_found' || record === null) throw new ApiError('not_found', `no capture ${id}`, { captureId: id });
      if (outcome === 'expired') throw new ApiError('artifact_not_available', `retention already deleted the artifact of ${id} (${record.expired?.reason ?? 'expired'} at ${record.expired?.at ?? '?'}); there is nothing left to pin`, { captureId: id, status: record.status });
      if (outcome === 'expiring') throw new ApiError('conflict', `retention is deleting the artifact of ${id} right now; it can no longer be kept`, { captureId: id });
      return record;
    },
  } satisfies PinsService);
};

export default fp(pinsPlugin, { name: 'heapcap-pins', dependencies: ['heapcap-audit'] });
