/**
 * The audit trail of the API: every trigger, cancel, artifact download and
 * registry change goes to the queue's audit stream (Redis) and to a log line
 * with the same facts. Writing it is part of the action: if the entry cannot
 * be written the request fails (an artifact is never served unaudited).
 */
import fp from 'fastify-plugin';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { AuditEntry, HeapcapQueue } from '@heapcap/state';
import { principalOf } from '../infra/auth.ts';

/** What happened; who and from where come from the request. */
export interface AuditFact {
  action: string;
  targetId?: string | undefined;
  captureId?: string | undefined;
  details?: Record<string, unknown> | undefined;
  /** Who, for a request without a principal (e.g. a Slack request refused for its signature); default: the principal's name. */
  who?: string | undefined;
}

/** Appends audit entries for requests. */
export interface AuditService {
  record(req: FastifyRequest, fact: AuditFact): Promise<AuditEntry>;
}

declare module 'fastify' {
  interface FastifyInstance {
    audit: AuditService;
  }
}

const auditPlugin: FastifyPluginAsync<{ queue: HeapcapQueue }> = async (app, { queue }) => {
  app.decorate('audit', {
    async record(req, fact) {
      const entry = await queue.audit.append({ ...fact, who: fact.who ?? principalOf(req).name, from: req.ip });
      // Under a key of its own: the ids and reason are caller-supplied data.
      req.log.info({ audit: entry }, `audit: ${entry.action} by ${entry.who}`);
      return entry;
    },
  } satisfies AuditService);
};

export default fp(auditPlugin, { name: 'heapcap-audit' });
