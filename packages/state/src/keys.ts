/**
 * Redis key layout under one prefix (a fresh prefix per test keeps tests apart).
 * BullMQ's own keys live under `<prefix>:<queue name>:…`, ours under `<prefix>:hc:…`.
 *
 * On a Redis Cluster the prefix is a hash tag (`{heapcap}`), so every key of
 * one deployment, ours and BullMQ's, is in one slot: the scripts touch a
 * record with the global indexes, and the request script reads records named
 * by a set's members (docs/scaling.md#redis-cluster says why one slot). On one
 * Redis the names stay untagged, as they always were.
 */
import { createHash } from 'node:crypto';
import { CAPTURE_STATUSES, type CaptureStatus } from './schemas.ts';

/**
 * The key prefix to use on this Redis: `prefix` as is on one Redis, in braces
 * (a hash tag) on a cluster unless it already holds one.
 */
export function effectivePrefix(prefix: string, cluster: boolean): string {
  if (!cluster || /\{[^}]+\}/.test(prefix)) return prefix;
  return `{${prefix}}`;
}

/** Every key name the queue package uses, derived from one prefix. */
export class Keys {
  readonly prefix: string;
  readonly base: string;

  constructor(prefix: string) {
    this.prefix = prefix;
    this.base = `${prefix}:hc`;
  }

  /** Hash: one capture record. */
  record(id: string): string {
    return `${this.base}:rec:${id}`;
  }
  /** String (JSON): one leak hunt. */
  leakHunt(id: string): string {
    return `${this.base}:hunt:${id}`;
  }
  /** Sorted set (score = createdAt ms): every hunt's id, what GET /v1/leak-hunts lists. */
  leakHuntIndex(): string {
    return `${this.base}:hunts`;
  }
  /** Sorted set (score = createdAt ms): one target's hunts. */
  leakHuntIndexTarget(targetId: string): string {
    return `${this.base}:hunts:target:${targetId}`;
  }
  /** Prefix of record keys, for scripts that read a record by id. */
  get recordPrefix(): string {
    return `${this.base}:rec:`;
  }
  /** Sorted sets (score = createdAt ms) used by list filters. */
  indexAll(): string {
    return `${this.base}:idx:all`;
  }
  indexTarget(targetId: string): string {
    return `${this.base}:idx:target:${targetId}`;
  }
  indexStatus(status: CaptureStatus): string {
    return `${this.base}:idx:status:${status}`;
  }
  /** The status indexes in CAPTURE_STATUSES order (scripts rely on the order). */
  statusIndexes(): string[] {
    return CAPTURE_STATUSES.map((s) => this.indexStatus(s));
  }
  indexTrigger(kind: string): string {
    return `${this.base}:idx:trigger:${kind}`;
  }
  /** Sorted set (score = createdAt ms) of the captures a schedule created: what its retention counts. */
  indexSchedule(scheduleId: string): string {
    return `${this.base}:idx:schedule:${scheduleId}`;
  }
  /** Sorted set of the queued/running captures of a target: what a new request may join. */
  active(targetId: string): string {
    return `${this.base}:active:${targetId}`;
  }
  /** Idempotency key, scoped to the caller so one caller cannot replay another's key. */
  idempotency(who: string, key: string): string {
    const digest = createHash('sha256').update(who).update('\n').update(key).digest('hex');
    return `${this.base}:idem:${digest}`;
  }
  /** The per-target lock (value: the holder's token). */
  targetLock(targetId: string): string {
    return `${this.base}:lock:${targetId}`;
  }
  /** Hash: the last measured snapshot cost of a target (headroom-history.ts). */
  headroom(targetId: string): string {
    return `${this.base}:headroom:${targetId}`;
  }
  /** Hash: target id → registry entry JSON. */
  targets(): string {
    return `${this.base}:targets`;
  }
  /** String: when the targets file was last synced into the registry (absent after Redis lost its data). */
  targetsSynced(): string {
    return `${this.base}:targets:synced`;
  }
  /** String: when this Redis's data began (set once; absent after it lost its data: the sentinel of redis-epoch.ts). */
  epoch(): string {
    return `${this.base}:epoch`;
  }
  /** String (JSON): the last time heapcap found Redis had lost its data, and what went with it. */
  dataLost(): string {
    return `${this.base}:data-lost`;
  }
  /** Stream: the audit log. */
  audit(): string {
    return `${this.base}:audit`;
  }
  /** Hash of the finished-capture counters, updated by the terminal transition itself (finished-metrics.ts). */
  finishedMetrics(): string {
    return `${this.base}:metrics:finished`;
  }
  /** Hash of monotonic counters (lock waits…). */
  counters(): string {
    return `${this.base}:counters`;
  }
  /** Hash: schedule id → schedule JSON (the definitions). */
  schedules(): string {
    return `${this.base}:schedules`;
  }
  /** Hash: schedule id → JSON of its last run (what GET /v1/schedules shows). */
  scheduleRuns(): string {
    return `${this.base}:schedules:runs`;
  }
  /** The lock a group's admissions take, so replicas never admit past `maxConcurrent` together. */
  scheduleAdmitLock(scheduleId: string): string {
    return `${this.base}:lock:schedule:${scheduleId}`;
  }
  /** The rules file's lock: one replica applies HEAPCAP_RULES_FILE at a time (rules-file.ts). */
  rulesSyncLock(): string {
    return `${this.base}:lock:rules-file`;
  }
  /** The janitor's lock: one retention run at a time across every process. */
  janitorLock(): string {
    return `${this.base}:lock:janitor`;
  }
  /** Sorted set (score = claim time ms) of captures retention claimed and has not finished deleting: retried first. */
  retentionPending(): string {
    return `${this.base}:retention:pending`;
  }
  /** String with a TTL: one worker's heartbeat (workers.ts). */
  worker(id: string): string {
    return `${this.base}:worker:${id}`;
  }
  /** Sorted set (score = last beat ms) of worker ids; a member whose heartbeat key expired is a dead worker. */
  workers(): string {
    return `${this.base}:workers`;
  }
  /** Set of placements that had jobs: their queues exist. */
  placements(): string {
    return `${this.base}:placements`;
  }
  /** Hash: watch rule id → rule JSON. */
  watchRules(): string {
    return `${this.base}:watch:rules`;
  }
  /** Hash: target id → that target's state under one rule. */
  watchStates(ruleId: string): string {
    return `${this.base}:watch:state:${ruleId}`;
  }
  /** Stream (capped): one target's memory samples. */
  watchSamples(targetId: string): string {
    return `${this.base}:watch:samples:${targetId}`;
  }
  /** String with a TTL: why the target's last sample failed (JSON), deleted by its next sample. */
  watchDown(targetId: string): string {
    return `${this.base}:watch:down:${targetId}`;
  }
  /** String with a TTL: the watcher that samples a target (its id). */
  watchLease(targetId: string): string {
    return `${this.base}:watch:lease:${targetId}`;
  }
  /** String with a TTL: a target's continuous allocation profile state (watch/profile-state.ts). */
  watchProfile(targetId: string): string {
    return `${this.base}:watch:profile:${targetId}`;
  }
  /** Sorted set (score = time ms) of a rule's firings for a target in the last 24 h: its maxPerDay. */
  watchFirings(ruleId: string, targetId: string): string {
    return `${this.base}:watch:fired:${ruleId}:${targetId}`;
  }
  /** Pub/sub: `<id> <status>` when a capture reaches a terminal status. */
  doneChannel(): string {
    return `${this.base}:ev:done`;
  }
  /** Pub/sub: `<id>` when a running capture should be cancelled. */
  cancelChannel(): string {
    return `${this.base}:ev:cancel`;
  }
}
