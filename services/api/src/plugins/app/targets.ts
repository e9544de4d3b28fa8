/** The target registry service: the allowlist, read by anyone with captures:read, edited by targets:admin (audited). */
import fp from 'fastify-plugin';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { isQueueError, type HeapcapQueue, type RegisteredTarget, type Target } from '@heapcap/state';
import { ApiError } from '../../errors.ts';
import { fromQueue } from './queue-errors.ts';

/** Registry operations for the routes. */
export interface TargetsService {
  list(): Promise<RegisteredTarget[]>;
  /** The entry, or `target_not_found`; `conflict` for a stored entry that no longer validates. */
  get(id: string): Promise<RegisteredTarget>;
  /** Register a new target; `conflict` when the id exists. */
  create(req: FastifyRequest, target: Target): Promise<RegisteredTarget>;
  /** Create or replace; `created` says which. */
  put(req: FastifyRequest, target: Target): Promise<{ entry: RegisteredTarget; created: boolean }>;
  /** Remove; `target_not_found` when there was none. */
  remove(req: FastifyRequest, id: string): Promise<void>;
}

function targetNotFound(id: string): ApiError {
  return new ApiError('target_not_found', `no target "${id}" in the registry`, { targetId: id });
}

declare module 'fastify' {
  interface FastifyInstance {
    targets: TargetsService;
  }
}

const targetsPlugin: FastifyPluginAsync<{ queue: HeapcapQueue }> = async (app, { queue }) => {
  const service: TargetsService = {
    list: () => fromQueue(() => queue.targets.list()),

    async get(id) {
      const entry = await fromQueue(() =>
        queue.targets.get(id).catch((err: unknown) => {
          // Stored before a rule it now fails was added: say so (not a 400 about a body the caller never sent).
          throw isQueueError(err, 'invalid_input') ? new ApiError('conflict', err.message, { targetId: id }) : err;
        }),
      );
      if (entry === null) throw targetNotFound(id);
      return entry;
    },

    async create(req, target) {
      // Check-then-put is not atomic; two admins creating the same id at once
      // both succeed and the last write wins, which PUT semantics allow anyway.
      if (await fromQueue(() => queue.targets.has(target.id))) {
        throw new ApiError('conflict', `target "${target.id}" already exists; use PUT /v1/targets/${target.id} to replace it`, { targetId: target.id });
      }
      const { entry } = await service.put(req, target);
      return entry;
    },

    async put(req, target) {
      await fromQueue(() => app.audit.record(req, { action: 'target.put', targetId: target.id, details: { kind: target.kind } }));
      return fromQueue(() => queue.targets.put(target, 'api'));
    },

    async remove(req, id) {
      // Look first so that deleting nothing is a 404 without an audit entry;
      // audit before the delete so that no delete happens unrecorded.
      // has(), not get(): an entry that no longer validates can still be removed.
      if (!(await fromQueue(() => queue.targets.has(id)))) throw targetNotFound(id);
      await fromQueue(() => app.audit.record(req, { action: 'target.delete', targetId: id }));
      if (!(await fromQueue(() => queue.targets.remove(id)))) throw targetNotFound(id);
    },
  };
  app.decorate('targets', service);
};

export default fp(targetsPlugin, { name: 'heapcap-targets', dependencies: ['heapcap-audit'] });
