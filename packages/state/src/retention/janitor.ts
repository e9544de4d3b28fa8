/**
 * The retention janitor: deletes artifacts that retention no longer keeps,
 * then records expired, then records past their TTL. One run at a time across
 * every process (a Redis lock with a renewed lease); BullMQ's job scheduler
 * starts runs, and `run()` may also be called directly (tests, an operator).
 *
 * What is kept (pinned captures always are; queued/running ones are never touched):
 * - a schedule's captures: the newest `keepLast` artifacts, none older than
 *   `maxAgeDays` (each from the schedule's `retention`, else the defaults);
 * - every other capture's artifact (REST, Slack, CLI, a deleted schedule's):
 *   until the default `maxAgeDays` (0 = forever);
 * - a record whose artifact is gone (expired, failed, cancelled, deleted):
 *   until `recordTtlMs` after its last update; then the record and its index
 *   entries are deleted, so Redis does not grow without bound.
 *
 * A deletion goes: claim (atomic: not pinned → `expiring`, into the pending
 * set) → audit → delete the objects through the store → expire the record. A
 * deletion that fails stays pending and is retried first on every run until
 * it succeeds: never forgotten.
 */
import { randomUUID } from 'node:crypto';
import { withRedisDeadline } from '../connection.ts';
import { acquireKeyLock, extendKeyLock, releaseKeyLock } from '../locks.ts';
import type { HeapcapQueue } from '../queue.ts';
import { replyStrings } from '../script.ts';
import { CLAIM_SCRIPT, DELETE_RECORD_SCRIPT, EXPIRE_SCRIPT } from './lua.ts';

/** How the janitor deletes a capture's objects: the artifact store's `remove` (snapshot, manifest, summary). */
export interface ArtifactRemover {
  remove(target: { key: string }): Promise<void>;
}

/** The janitor's log (a pino logger fits). */
export interface JanitorLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/** The defaults (HEAPCAP_RETENTION_KEEP_LAST, HEAPCAP_RETENTION_MAX_AGE_DAYS, HEAPCAP_RECORD_TTL_DAYS). */
export interface RetentionDefaults {
  keepLast: number;
  /** 0 = no age limit. */
  maxAgeDays: number;
  recordTtlMs: number;
}

export interface JanitorOptions {
  queue: HeapcapQueue;
  store: ArtifactRemover;
  log: JanitorLog;
  defaults: RetentionDefaults;
  /** One deletion's deadline (a store that hangs must not hold the run); default 60 s. */
  removeTimeoutMs?: number;
  /** Deletions per run; the rest wait for the next run. Default 500. */
  maxDeletionsPerRun?: number;
}

/** Why an artifact goes. */
export type ExpireReason = 'keepLast' | 'maxAge';

/** What one run did. */
export interface JanitorReport {
  /** False when another process held the janitor lock (this run did nothing). */
  ran: boolean;
  deleted: { captureId: string; reason: ExpireReason }[];
  failed: { captureId: string; error: string }[];
  /** Records deleted past their TTL. */
  recordsDeleted: number;
}

interface Candidate {
  captureId: string;
  reason: ExpireReason;
  scheduleId: string | undefined;
}

/** Fields of a record the janitor decides on (HMGET, not the whole record). */
interface Facts {
  status: string | null;
  artifactKey: string | null;
  pinned: boolean;
  createdAtMs: number;
  updatedAt: string;
  targetId: string;
  triggerKind: string;
  scheduleId: string | undefined;
}

const FIELDS = ['status', 'artifact', 'pinned', 'createdAtMs', 'updatedAt', 'targetId', 'trigger'] as const;
const LOCK_LEASE_MS = 60_000;
const BATCH = 500;
const DAY_MS = 86_400_000;

function toFacts(values: (string | null)[]): Facts | null {
  const [status, artifact, pinned, createdAtMs, updatedAt, targetId, trigger] = values;
  if (status === null || status === undefined) return null;
  const a = artifact === null || artifact === undefined || artifact === '' ? null : (JSON.parse(artifact) as { key: string });
  const t = trigger === null || trigger === undefined || trigger === '' ? { kind: '' } : (JSON.parse(trigger) as { kind: string; scheduleId?: string });
  return {
    status,
    artifactKey: a?.key ?? null,
    pinned: pinned !== null && pinned !== undefined && pinned !== '',
    createdAtMs: Number(createdAtMs ?? 0),
    updatedAt: updatedAt ?? '',
    targetId: targetId ?? '',
    triggerKind: t.kind,
    scheduleId: t.scheduleId,
  };
}

/** Deletes what retention no longer keeps (see the module comment). */
export class Janitor {
  readonly #o: Required<JanitorOptions>;

  constructor(options: JanitorOptions) {
    this.#o = { removeTimeoutMs: 60_000, maxDeletionsPerRun: 500, ...options };
  }

  #deadline<T>(p: Promise<T>, what: string): Promise<T> {
    return withRedisDeadline(p, this.#o.queue.settings.redisTimeoutMs, what);
  }

  async #facts(ids: readonly string[]): Promise<(Facts | null)[]> {
    if (ids.length === 0) return [];
    const { redis, keys } = this.#o.queue;
    const rows = await this.#deadline(Promise.all(ids.map((id) => redis.hmget(keys.record(id), ...FIELDS))), 'janitor read');
    return rows.map(toFacts);
  }

  /** One run; resolves with what it did (`ran: false` when another process is running one). */
  async run(nowMs = Date.now()): Promise<JanitorReport> {
    const { queue } = this.#o;
    const report: JanitorReport = { ran: false, deleted: [], failed: [], recordsDeleted: 0 };
    const token = randomUUID();
    const lockKey = queue.keys.janitorLock();
    if (!(await acquireKeyLock(queue, lockKey, token, LOCK_LEASE_MS))) return report;
    report.ran = true;
    // Renew the lease while the run lasts (deletions from a slow store can take a while).
    const renew = setInterval(() => void extendKeyLock(queue, lockKey, token, LOCK_LEASE_MS).catch(() => false), LOCK_LEASE_MS / 3);
    renew.unref();
    try {
      const candidates = await this.#candidates(nowMs);
      for (const c of candidates.slice(0, this.#o.maxDeletionsPerRun)) await this.#expire(c, report);
      report.recordsDeleted = await this.#pruneRecords(nowMs);
    } finally {
      clearInterval(renew);
      await releaseKeyLock(queue, lockKey, token).catch(() => false);
    }
    if (report.deleted.length + report.failed.length + report.recordsDeleted > 0) {
      this.#o.log.info({ deleted: report.deleted.length, failed: report.failed.length, recordsDeleted: report.recordsDeleted }, 'retention run');
    }
    return report;
  }

  /** Pending deletions first (retries), then what each policy no longer keeps; each capture once. */
  async #candidates(nowMs: number): Promise<Candidate[]> {
    const { queue, defaults } = this.#o;
    const out = new Map<string, Candidate>();
    const add = (c: Candidate): void => {
      if (!out.has(c.captureId)) out.set(c.captureId, c);
    };
    const keepable = (f: Facts | null): f is Facts => f !== null && f.status === 'succeeded' && f.artifactKey !== null && !f.pinned;

    // 1. Claimed before and not finished: retried, whatever the policy says now.
    const pending = await this.#deadline(queue.redis.zrange(queue.keys.retentionPending(), 0, -1), 'pending');
    const claims = await this.#deadline(Promise.all(pending.map((id) => queue.redis.hget(queue.keys.record(id), 'expiring'))), 'claims');
    pending.forEach((captureId, i) => {
      const claim = claims[i];
      if (claim === null || claim === undefined || claim === '') return;
      const c = JSON.parse(claim) as { reason: ExpireReason; scheduleId?: string };
      add({ captureId, reason: c.reason, scheduleId: c.scheduleId });
    });

    // 2. Each schedule's own captures, newest first.
    const schedules = await queue.schedules.list();
    const live = new Set(schedules.map((s) => s.id));
    for (const s of schedules) {
      const keepLast = s.retention.keepLast ?? defaults.keepLast;
      const maxAgeDays = s.retention.maxAgeDays ?? defaults.maxAgeDays;
      const cutoff = maxAgeDays > 0 ? nowMs - maxAgeDays * DAY_MS : -Infinity;
      const index = queue.keys.indexSchedule(s.id);
      let kept = 0;
      for (let offset = 0; ; offset += BATCH) {
        const ids = await this.#deadline(queue.redis.zrevrange(index, offset, offset + BATCH - 1), 'schedule index');
        const facts = await this.#facts(ids);
        ids.forEach((captureId, i) => {
          const f = facts[i] ?? null;
          if (!keepable(f)) return;
          if (kept >= keepLast) add({ captureId, reason: 'keepLast', scheduleId: s.id });
          else if (f.createdAtMs < cutoff) add({ captureId, reason: 'maxAge', scheduleId: s.id });
          else kept++;
        });
        if (ids.length < BATCH) break;
      }
    }

    // 3. Every other capture: the default age limit (a live schedule's captures follow its own policy above).
    if (defaults.maxAgeDays > 0) {
      await this.#scanOlderThan(nowMs - defaults.maxAgeDays * DAY_MS, (captureId, f) => {
        if (keepable(f) && (f.scheduleId === undefined || !live.has(f.scheduleId))) add({ captureId, reason: 'maxAge', scheduleId: f.scheduleId });
      });
    }
    return [...out.values()];
  }

  /** Calls `visit` for every record created before `cutoffMs` (oldest first). */
  async #scanOlderThan(cutoffMs: number, visit: (captureId: string, f: Facts | null) => void): Promise<void> {
    const { queue } = this.#o;
    for (let offset = 0; ; offset += BATCH) {
      const ids = await this.#deadline(queue.redis.zrangebyscore(queue.keys.indexAll(), '-inf', `(${cutoffMs}`, 'LIMIT', offset, BATCH), 'index all');
      const facts = await this.#facts(ids);
      ids.forEach((id, i) => visit(id, facts[i] ?? null));
      if (ids.length < BATCH) return;
    }
  }

  /** Claim → audit → delete the objects → expire the record. A failure leaves the claim for the next run. */
  async #expire(c: Candidate, report: JanitorReport): Promise<void> {
    const { queue, store, log } = this.#o;
    const { redis, keys } = queue;
    const claim = JSON.stringify({ reason: c.reason, scheduleId: c.scheduleId });
    const [word] = replyStrings(await this.#deadline(CLAIM_SCRIPT.run(redis, [keys.record(c.captureId), keys.retentionPending()], [Date.now(), claim, c.captureId]), 'claim'));
    if (word !== 'ok') {
      // Pinned meanwhile, already expired, or gone: nothing to delete (and nothing pending).
      await this.#deadline(redis.zrem(keys.retentionPending(), c.captureId), 'pending');
      return;
    }
    const record = await queue.getCapture(c.captureId);
    if (record === null || record.artifact === null) return;
    const key = record.artifact.key;
    const facts = { captureId: c.captureId, targetId: record.targetId, reason: c.reason, key, scheduleId: c.scheduleId };
    try {
      // Audited before the objects go: a deletion never happens unrecorded.
      const entry = await queue.audit.append({ action: 'capture.expire', who: 'retention', targetId: record.targetId, captureId: c.captureId, details: { reason: c.reason, key, scheduleId: c.scheduleId } });
      await withDeadline(store.remove({ key }), this.#o.removeTimeoutMs, `deleting ${key}`);
      const expired = JSON.stringify({ at: new Date().toISOString(), by: 'retention', reason: c.reason, key, scheduleId: c.scheduleId });
      await this.#deadline(
        EXPIRE_SCRIPT.run(redis, [keys.record(c.captureId), keys.retentionPending(), keys.indexStatus('succeeded'), keys.indexStatus('expired')], [c.captureId, new Date().toISOString(), expired]),
        'expire',
      );
      await this.#deadline(redis.hincrby(keys.counters(), 'retention_deleted', 1), 'counter');
      report.deleted.push({ captureId: c.captureId, reason: c.reason });
      log.info({ audit: entry, ...facts }, `retention: deleted the artifact of ${c.captureId} (${c.reason})`);
    } catch (err) {
      const error = err instanceof Error ? err.message : String(err);
      report.failed.push({ captureId: c.captureId, error });
      await this.#deadline(redis.hincrby(keys.counters(), 'retention_failures', 1), 'counter').catch(() => 0);
      log.warn({ err, ...facts }, `retention: could not delete the artifact of ${c.captureId}; retrying on the next run`);
    }
  }

  /** Delete records past their TTL (finished, no artifact, unpinned, not updated since the cutoff). */
  async #pruneRecords(nowMs: number): Promise<number> {
    const { queue, defaults } = this.#o;
    const { redis, keys } = queue;
    const cutoffMs = nowMs - defaults.recordTtlMs;
    const cutoffIso = new Date(cutoffMs).toISOString();
    const doomed: [string, Facts | null][] = [];
    await this.#scanOlderThan(cutoffMs, (id, f) => {
      if (f === null || (f.artifactKey === null && !f.pinned && f.status !== 'queued' && f.status !== 'running' && f.updatedAt <= cutoffIso)) doomed.push([id, f]);
    });
    let n = 0;
    for (const [id, f] of doomed) {
      const kind = f?.triggerKind || 'rest';
      const [word] = replyStrings(
        await this.#deadline(
          DELETE_RECORD_SCRIPT.run(
            redis,
            [
              keys.record(id),
              keys.indexAll(),
              keys.indexTarget(f?.targetId ?? ''),
              keys.indexTrigger(kind),
              f?.scheduleId === undefined ? keys.indexTrigger(kind) : keys.indexSchedule(f.scheduleId),
              keys.active(f?.targetId ?? ''),
              ...keys.statusIndexes(),
            ],
            [id, cutoffIso],
          ),
          'delete record',
        ),
      );
      if (word === 'deleted') n++;
    }
    if (n > 0) await this.#deadline(redis.hincrby(keys.counters(), 'records_deleted', n), 'counter');
    return n;
  }
}

/**
 * `p`, or a rejection after `ms` (the store's own retries may take longer than a run should wait). The
 * rejection comes from setImmediate, after the loop turn has read the sockets: an answer that arrived while
 * this process stalled is taken (as in withRedisDeadline).
 */
async function withDeadline<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p, new Promise<never>((_, reject) => (timer = setTimeout(() => setImmediate(() => reject(new Error(`${what}: no answer within ${ms} ms`))), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}
