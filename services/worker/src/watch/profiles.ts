/**
 * Continuous allocation profiles, for the watcher that holds the targets (watcher.ts): keeps V8's sampler on in
 * each held target that has a profile (`ContinuousSampler`, its own inspector session), and every `every` asks
 * for a read of it, an ordinary capture (kind sampling, `readRunning`, trigger kind `profile`): the capture
 * worker reads the running sampler over its own session and stores the `.heapprofile` with its record and
 * manifest, so lists, retention, the /profile route and `heapcap profiles` treat it like any profile.
 *
 * The state (profile-state.ts in @heapcap/state) is in Redis: who holds the sampler, when it started, when the
 * holder last found it running and when the last read was asked. A new holder (after a restart, a handover, a
 * SIGKILL: V8 stops a sampler when the session that started it closes) starts it again and records the gap on
 * its next profile (`trigger.profile.gap`). The sampler is stopped when the profile is switched off, the target
 * leaves the registry or the watcher lets the target go.
 */
import type { Logger } from 'pino';
import { formatDuration } from '@heapcap/config';
import { ContinuousSampler, type EnsureOutcome } from '@heapcap/capture';
import { isTerminal, type EffectiveProfile, type HeapcapQueue, type Target, type Trigger } from '@heapcap/state';
import type { ProfileState } from '@heapcap/state/watch';
import { targetToEndpoint } from '../target-endpoint.ts';

/** How long the state outlives its last write at least: long enough for the next holder to see the gap. */
const STATE_TTL_MS = 6 * 3_600_000;
/**
 * How often an unchanged state is written again (its `aliveAt`): a gap's `from` is at most this early, and a
 * snapshot's worker takes a state older than 2 minutes for no running sampler (beside-profile.ts).
 */
const ALIVE_WRITE_MS = 30_000;

export interface ProfileKeeperDeps {
  queue: HeapcapQueue;
  log: Logger;
  /** The watcher's id (the holder's name in the state). */
  id: string;
  /** Deadline of each command to a target. */
  commandMs: number;
}

interface Held {
  /** The endpoint it was made for (a new sampler when the registry entry points elsewhere). */
  key: string;
  sampler: ContinuousSampler;
  /** The read already followed (its outcome looked at). */
  followed?: string;
  /** The state as this holder last made it, and when it was last written to Redis (ms). */
  state?: ProfileState;
  writtenAt?: number;
}

/** The continuous samplers of one watcher. */
export class ProfileKeeper {
  readonly #deps: ProfileKeeperDeps;
  readonly #held = new Map<string, Held>();
  /** Targets whose failure is already logged (once until it works again). */
  readonly #failing = new Set<string>();

  constructor(deps: ProfileKeeperDeps) {
    this.#deps = deps;
  }

  /** The targets whose sampler this watcher keeps on now. */
  get profiling(): string[] {
    return [...this.#held].filter(([, h]) => h.sampler.running).map(([id]) => id);
  }

  /** Keep `target`'s sampler on at `profile`, and ask for a read when one is due. Never throws. */
  async keep(target: Target, profile: EffectiveProfile): Promise<void> {
    const { queue, log } = this.#deps;
    const id = target.id;
    try {
      const held = this.#sampler(target);
      const outcome = await held.sampler.ensure(profile.samplingIntervalBytes);
      if (this.#failing.delete(id)) log.info({ targetId: id }, 'continuous profile: the target answers again');
      if (outcome === 'busy') {
        log.info({ targetId: id }, 'continuous profile: another sampler runs in the target (a one-off profile, or another holder); starting ours once it has stopped');
        return;
      }
      const now = new Date();
      // This holder is the state's only writer while it holds the target: Redis is read once per takeover, and
      // written when something changed or every ALIVE_WRITE_MS (2 round trips per tick and target were 530/s at 1,000 targets).
      const prev = held.state ?? (await queue.watch.profileState(id));
      let state = this.#next(prev, outcome, profile, now);
      state = await this.#follow(id, held, state);
      if (held.sampler.running) state = await this.#readIfDue(target, profile, state, now);
      held.state = state;
      const changed = prev === null || state.startedAt !== prev.startedAt || state.lastReadId !== prev.lastReadId || state.holder !== prev.holder;
      if (changed || now.getTime() - (held.writtenAt ?? 0) >= ALIVE_WRITE_MS) {
        await queue.watch.setProfileState(id, state, Math.max(STATE_TTL_MS, 3 * profile.everyMs));
        held.writtenAt = now.getTime();
      }
    } catch (err) {
      if (!this.#failing.has(id)) log.warn({ targetId: id, err: err instanceof Error ? err.message : String(err) }, 'continuous profile: could not keep the sampler on; trying again at each tick');
      this.#failing.add(id);
    }
  }

  #sampler(target: Target): Held {
    const key = JSON.stringify(targetToEndpoint(target));
    const current = this.#held.get(target.id);
    if (current !== undefined && current.key === key) return current;
    if (current !== undefined) void current.sampler.stop();
    const { commandMs } = this.#deps;
    const held: Held = { key, sampler: new ContinuousSampler(targetToEndpoint(target), { connectMs: commandMs, commandMs }) };
    this.#held.set(target.id, held);
    return held;
  }

  /** The state after `ensure`: a start opens a new sampler (with the gap since the last one was seen running). */
  #next(prev: ProfileState | null, outcome: Exclude<EnsureOutcome, 'busy'>, profile: EffectiveProfile, now: Date): ProfileState {
    const iso = now.toISOString();
    if (outcome === 'running' && prev !== null && prev.holder === this.#deps.id) return { ...prev, aliveAt: iso };
    const gap =
      prev === null
        ? undefined
        : { from: prev.aliveAt, to: iso, reason: prev.holder === this.#deps.id ? 'the sampler stopped (its inspector session closed: the target restarted, or a one-off profile stopped it)' : `handover from ${prev.holder}` };
    this.#deps.log.info({ gap, samplingIntervalBytes: profile.samplingIntervalBytes, from: profile.from }, 'continuous profile: sampler started');
    return { holder: this.#deps.id, startedAt: iso, aliveAt: iso, samplingIntervalBytes: profile.samplingIntervalBytes, gap, lastReadAt: prev?.lastReadAt, lastReadId: prev?.lastReadId };
  }

  /** A read that found no sampler (V8's was stopped from another session): stop ours so the next tick starts it again. */
  async #follow(id: string, held: Held, state: ProfileState): Promise<ProfileState> {
    const readId = state.lastReadId;
    if (readId === undefined || held.followed === readId) return state;
    const record = await this.#deps.queue.getCapture(readId);
    if (record !== null && !isTerminal(record)) return state;
    held.followed = readId;
    if (record?.error?.code === 'sampler_not_running' && held.sampler.running) {
      this.#deps.log.warn({ targetId: id, captureId: readId }, 'continuous profile: a read found no sampler running; starting it again');
      await held.sampler.stop();
    }
    return state;
  }

  /** Ask for a read when `every` has passed since the last (or since the sampler started). */
  async #readIfDue(target: Target, profile: EffectiveProfile, state: ProfileState, now: Date): Promise<ProfileState> {
    const last = Date.parse(state.lastReadAt ?? state.startedAt);
    // A sampler started after the last read has run for less than `every`: its first read waits for it.
    const from = Math.max(last, Date.parse(state.startedAt));
    if (now.getTime() < from + profile.everyMs) return state;
    const trigger: Trigger = {
      kind: 'profile',
      who: `profile:${profile.from}`,
      reason: `continuous allocation profile, every ${formatDuration(profile.everyMs)}`,
      profile: { since: state.startedAt, samplingIntervalBytes: state.samplingIntervalBytes, gap: state.gap },
    };
    const res = await this.#deps.queue.requestCapture({ targetId: target.id, options: { kind: 'sampling', readRunning: true, samplingIntervalBytes: state.samplingIntervalBytes }, trigger });
    this.#deps.log.info({ targetId: target.id, captureId: res.record.id, coalesced: res.coalesced }, 'continuous profile: read requested');
    // The gap goes with one profile only.
    return { ...state, gap: undefined, lastReadAt: now.toISOString(), lastReadId: res.record.id };
  }

  /**
   * Stop `targetId`'s sampler. `off` (the profile was switched off) and `gone` (the target left the registry or
   * this watcher's reach) forget its state too; `released` (another watcher holds it now, or this one stops)
   * keeps it, so the next holder records the gap.
   */
  async drop(targetId: string, why: 'off' | 'gone' | 'released'): Promise<void> {
    const held = this.#held.get(targetId);
    this.#held.delete(targetId);
    this.#failing.delete(targetId);
    if (held !== undefined) {
      await held.sampler.stop();
      this.#deps.log.info({ targetId, why }, 'continuous profile: sampler stopped');
    }
    if (why !== 'released' && held !== undefined) await this.#deps.queue.watch.dropProfileState(targetId).catch((err: unknown) => this.#deps.log.warn({ targetId, err }, 'could not drop the continuous profile state'));
  }

  /** The targets it holds a sampler for (running or not). */
  held(): string[] {
    return [...this.#held.keys()];
  }

  /** Stop every sampler (the state stays: the next holder records the gap). */
  async close(): Promise<void> {
    await Promise.allSettled(this.held().map((id) => this.drop(id, 'released')));
  }
}
