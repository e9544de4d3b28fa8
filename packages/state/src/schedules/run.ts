/**
 * One run of a schedule, in two steps. `planRun` (the scheduler's job) resolves
 * the targets (the selector against the registry as it is now) and adds one
 * member job per target, delayed by its spread offset. `takeTurn` (a member
 * job) makes or joins that target's capture. A schedule of one target has one
 * member at offset 0: `planRun` takes its turn itself, with the schedule and
 * target it has just read, and adds a member job only when the turn must wait
 * (another replica holds the admission lock). That saves a BullMQ job (its add,
 * its two moves and their events) and three reads per turn. The member job's
 * id kept a retried run from taking a turn twice; here the schedule's last
 * turn does: a run whose turn is already recorded is not taken again.
 *
 * A turn:
 *
 * - a capture of the target already queued or running: join it (`coalesced`);
 * - else, for a group, at most `maxConcurrent` of the group's targets may have
 *   a capture queued or running (whoever triggered it): if that many do, wait
 *   and try again, until the next run is due (then `skipped: group_busy`);
 * - else create it (trigger `schedule`, who = the schedule's owner).
 *
 * The group check and the request run under the schedule's admission lock, so
 * two replicas taking turns at the same moment never both pass the check.
 */
import { randomUUID } from 'node:crypto';
import type { QueueContext } from '../context.ts';
import { withRedisDeadline } from '../connection.ts';
import { acquireKeyLock, releaseKeyLock } from '../locks.ts';
import type { TargetRegistry } from '../registry.ts';
import type { RequestCaptureInput, RequestCaptureResult } from '../requests.ts';
import { matchesSelector, selectTargets } from '../selectors.ts';
import type { Target } from '../schemas.ts';
import type { MemberJob } from './jobs.ts';
import type { LastRun, Schedule } from './schema.ts';
import { spreadOffsets } from './spread.ts';
import type { ScheduleStore } from './store.ts';
import { intervalAfter } from './timing.ts';

/** What runs and turns work with. */
export interface RunDeps {
  ctx: QueueContext;
  schedules: ScheduleStore;
  targets: TargetRegistry;
  /** Requests the capture of `target`, read from the registry in this turn (not read again). */
  request: (input: RequestCaptureInput, target: Target) => Promise<RequestCaptureResult>;
}

/** The admission lock's lease: the check and the request take milliseconds; this only bounds a holder that died. */
const ADMIT_LEASE_MS = 10_000;

/** What planning a run did. */
export type PlanResult =
  /** The schedule is gone or paused: nothing to do (its scheduler is removed). */
  | { kind: 'gone' }
  /** No target to capture: recorded as a skipped turn. */
  | { kind: 'empty'; turn: LastRun }
  | { kind: 'planned'; members: { targetId: string; offsetMs: number }[]; intervalMs: number }
  /** A schedule of one target: its turn taken in the run itself; `again` when an earlier try of this run had taken it. */
  | { kind: 'taken'; turn: LastRun; again: boolean };

/** How a turn ended. */
export type TurnResult =
  | { kind: 'gone' }
  /** Not yet: the group is at maxConcurrent, or another replica holds the admission lock. */
  | { kind: 'wait'; why: 'group_busy' | 'admission_locked' }
  | { kind: 'done'; turn: LastRun };

/** The targets of a schedule now: its one target (if registered), or the selector's matches (sorted by id). */
export async function resolveTargets(deps: Pick<RunDeps, 'targets'>, schedule: Schedule): Promise<Target[]> {
  if (schedule.target !== undefined) {
    const entry = await deps.targets.get(schedule.target);
    return entry === null ? [] : [entry.target];
  }
  const all = (await deps.targets.list()).map((e) => e.target);
  return schedule.selector === undefined ? [] : selectTargets(all, schedule.selector);
}

/** Plan the run of `scheduleId` scheduled at `runAt` (ms): add its member jobs. */
export async function planRun(deps: RunDeps, scheduleId: string, runAt: number, nowMs = Date.now()): Promise<PlanResult> {
  const { schedule, lastRun } = await deps.schedules.getWithLastRun(scheduleId);
  if (schedule === null || !schedule.enabled) {
    // A run of a schedule deleted or paused between the two writes: make the scheduler match.
    await withRedisDeadline(deps.schedules.bull.removeJobScheduler(scheduleId), deps.ctx.settings.redisTimeoutMs, 'scheduler remove');
    return { kind: 'gone' };
  }
  // A retried run (its job stalled, or planned twice) whose turn is recorded: taken already.
  if (schedule.target !== undefined && lastRun?.runAt === new Date(runAt).toISOString()) return { kind: 'taken', turn: lastRun, again: true };
  const entry = schedule.target === undefined ? undefined : await deps.targets.get(schedule.target);
  const targets = entry === undefined ? await resolveTargets(deps, schedule) : entry === null ? [] : [entry.target];
  if (targets.length === 0) {
    const turn: LastRun = { at: new Date(nowMs).toISOString(), runAt: new Date(runAt).toISOString(), targetId: schedule.target ?? null, outcome: 'skipped', coalesced: false, reason: 'no_targets', captureId: null };
    await deps.schedules.recordTurn(scheduleId, turn);
    return { kind: 'empty', turn };
  }
  const intervalMs = intervalAfter(schedule, runAt);
  if (entry != null) {
    const member: MemberJob = { scheduleId, targetId: entry.target.id, runAt, deadline: runAt + intervalMs };
    const turn = await turnOf(deps, schedule, entry.target, member, nowMs);
    if (turn.kind === 'done') return { kind: 'taken', turn: turn.turn, again: false };
    // Another replica holds the admission lock: a member job tries again, as a group's member would.
    await deps.schedules.addMembers([{ job: member, delayMs: 0 }]);
    return { kind: 'planned', members: [{ targetId: member.targetId, offsetMs: 0 }], intervalMs };
  }
  const members = spreadOffsets(
    targets.map((t) => t.id),
    intervalMs,
  );
  // Offsets count from the scheduled time: a run picked up late keeps its members' places.
  await deps.schedules.addMembers(
    members.map((m) => ({ job: { scheduleId, targetId: m.targetId, runAt, deadline: runAt + intervalMs } satisfies MemberJob, delayMs: runAt + m.offsetMs - nowMs })),
  );
  return { kind: 'planned', members, intervalMs };
}

/** True when `targetId` has a capture queued or running. */
async function hasActiveCapture(ctx: QueueContext, targetId: string): Promise<boolean> {
  return (await activeTargets(ctx, [targetId])).size > 0;
}

/** Which of `targetIds` have a capture queued or running. */
async function activeTargets(ctx: QueueContext, targetIds: readonly string[]): Promise<Set<string>> {
  const { keys, redis, settings } = ctx;
  const members = await withRedisDeadline(Promise.all(targetIds.map((id) => redis.zrange(keys.active(id), 0, -1))), settings.redisTimeoutMs, 'active captures');
  const pairs = targetIds.flatMap((t, i) => (members[i] ?? []).map((captureId) => [t, captureId] as const));
  if (pairs.length === 0) return new Set();
  const statuses = await withRedisDeadline(Promise.all(pairs.map(([, id]) => redis.hget(keys.record(id), 'status'))), settings.redisTimeoutMs, 'active statuses');
  return new Set(pairs.filter((_, i) => statuses[i] === 'queued' || statuses[i] === 'running').map(([t]) => t));
}

/** Take one target's turn of a run (see the module comment). Records the turn when it is done. */
export async function takeTurn(deps: RunDeps, member: MemberJob, nowMs = Date.now()): Promise<TurnResult> {
  const schedule = await deps.schedules.get(member.scheduleId);
  if (schedule === null || !schedule.enabled) return { kind: 'gone' };
  return turnOf(deps, schedule, undefined, member, nowMs);
}

/** A turn of `schedule`, enabled; `target` when the caller has just read it from the registry. */
async function turnOf(deps: RunDeps, schedule: Schedule, target: Target | undefined, member: MemberJob, nowMs: number): Promise<TurnResult> {
  const base = { runAt: new Date(member.runAt).toISOString(), targetId: member.targetId, captureId: null, coalesced: false };
  const done = async (turn: Omit<LastRun, 'at'>): Promise<TurnResult> => {
    const full: LastRun = { at: new Date().toISOString(), ...turn };
    await deps.schedules.recordTurn(schedule.id, full);
    return { kind: 'done', turn: full };
  };
  if (nowMs >= member.deadline) return done({ ...base, outcome: 'skipped', reason: member.waited ?? 'overdue' });
  const found = target ?? (await deps.targets.get(member.targetId))?.target;
  if (found === undefined) return done({ ...base, outcome: 'skipped', reason: 'target_gone' });
  const inGroup = schedule.selector !== undefined ? matchesSelector(found.labels, schedule.selector) : schedule.target === member.targetId;
  if (!inGroup) return done({ ...base, outcome: 'skipped', reason: 'left_group' });

  const lockKey = deps.ctx.keys.scheduleAdmitLock(schedule.id);
  const token = randomUUID();
  if (!(await acquireKeyLock(deps.ctx, lockKey, token, ADMIT_LEASE_MS))) return { kind: 'wait', why: 'admission_locked' };
  let result: RequestCaptureResult;
  try {
    // Joining a capture of this very target adds no load: no group check for it.
    if (schedule.selector !== undefined && !(await hasActiveCapture(deps.ctx, member.targetId))) {
      const all = (await deps.targets.list()).map((e) => e.target);
      const group = selectTargets(all, schedule.selector).map((t) => t.id);
      const busy = await activeTargets(deps.ctx, group);
      if (busy.size >= schedule.maxConcurrent) return { kind: 'wait', why: 'group_busy' };
    }
    result = await deps.request(
      {
        targetId: member.targetId,
        options: schedule.options,
        trigger: { kind: 'schedule', who: schedule.owner, scheduleId: schedule.id, reason: schedule.reason ?? `schedule ${schedule.id}` },
      },
      found,
    );
  } finally {
    await releaseKeyLock(deps.ctx, lockKey, token).catch(() => false);
  }
  return done({ ...base, outcome: result.created ? 'created' : 'coalesced', coalesced: result.coalesced, captureId: result.record.id });
}
