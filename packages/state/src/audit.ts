/**
 * The audit log: who did what, when, from where. A capped Redis stream (XADD
 * MAXLEN ~) so it cannot grow without bound; `append` returns the entry so the
 * caller writes the same facts to its log line.
 */
import type { QueueContext } from './context.ts';
import { withRedisDeadline } from './connection.ts';

/** What to record. Never put a secret here (token values, credentials). */
export interface AuditInput {
  /** e.g. `capture.trigger`, `capture.cancel`, `artifact.download`, `target.put`, `target.delete`. */
  action: string;
  /** Token name or user; never the token. */
  who: string;
  /** Client address. */
  from?: string | undefined;
  targetId?: string | undefined;
  captureId?: string | undefined;
  /** Small, non-secret facts (outcome, status code…). */
  details?: Record<string, unknown> | undefined;
}

/** A written entry: the input plus the stream id and the time. */
export interface AuditEntry extends AuditInput {
  id: string;
  at: string;
}

/** Append-only audit stream. */
export class AuditLog {
  readonly #ctx: QueueContext;

  constructor(ctx: QueueContext) {
    this.#ctx = ctx;
  }

  /** Append an entry; resolves with it (including the stream id). */
  async append(input: AuditInput): Promise<AuditEntry> {
    const at = new Date().toISOString();
    const fields: string[] = ['at', at, 'action', input.action, 'who', input.who];
    if (input.from !== undefined) fields.push('from', input.from);
    if (input.targetId !== undefined) fields.push('targetId', input.targetId);
    if (input.captureId !== undefined) fields.push('captureId', input.captureId);
    if (input.details !== undefined) fields.push('details', JSON.stringify(input.details));
    const id = await withRedisDeadline(
      this.#ctx.redis.xadd(this.#ctx.keys.audit(), 'MAXLEN', '~', this.#ctx.settings.auditMaxLen, '*', ...fields),
      this.#ctx.settings.redisTimeoutMs,
      'audit XADD',
    );
    return { ...input, id: id ?? '', at };
  }

  /** The newest `count` entries, newest first. */
  async recent(count = 100): Promise<AuditEntry[]> {
    const rows = await withRedisDeadline(this.#ctx.redis.xrevrange(this.#ctx.keys.audit(), '+', '-', 'COUNT', count), this.#ctx.settings.redisTimeoutMs, 'audit read');
    return rows.map(([id, flat]) => {
      const f: Record<string, string> = {};
      for (let i = 0; i + 1 < flat.length; i += 2) f[flat[i]!] = flat[i + 1]!;
      return {
        id,
        at: f['at'] ?? '',
        action: f['action'] ?? '',
        who: f['who'] ?? '',
        from: f['from'],
        targetId: f['targetId'],
        captureId: f['captureId'],
        details: f['details'] === undefined ? undefined : (JSON.parse(f['details']) as Record<string, unknown>),
      };
    });
  }
}
