/**
 * The watcher: samples every watched target at the faster of the watch
 * interval and HEAPCAP_SAMPLE_INTERVAL (every other target at the latter),
 * records why a sample failed (the target is down), and runs the watch rules
 * over the samples. Every `heapcap serve` and `heapcap
 * worker` runs one; a lease per target in Redis makes exactly one of them
 * sample a given target. The holder renews its leases at every tick (a
 * quarter of the interval) for one interval; when it dies, another watcher
 * takes the target over at its next tick after the lease ran out, so within
 * 1.25 intervals (at once when the holder stopped and handed its leases back).
 * The new holder samples the target one interval after its last stored
 * sample, so a handover neither doubles a sample nor skips one; a target
 * without samples is first sampled at its own offset inside the interval
 * (a hash of its id), so a watcher never connects to all its targets at once. A watcher started with placements samples only the targets
 * of those placements (and targets without one), like the capture worker:
 * an inspector port is reachable from its own node only.
 *
 * Per sample, for each rule watching the target: compute the metric, step
 * the episode (watch/episode.ts in @heapcap/state), and on `fire` count the
 * firing against the rule's daily cap and request a snapshot with
 * trigger `{kind: watch, ruleId, sample, samples}`. At the following samples
 * the holder follows that capture: when the headroom gate refused it, it
 * requests an allocation sampling profile instead (it costs the target a
 * fraction of a snapshot). Every state is stored in Redis, so a takeover
 * carries on where the last holder stopped.
 */
import type { Logger } from 'pino';
import { coversPlacement, effectiveProfile, isTerminal, type EffectiveProfile, type HeapcapQueue, type Target, type Trigger } from '@heapcap/state';
import { metricValue, watchedBy, watchFired, watchStep, initialWatchState, type Firing, type FiringOutcome, type WatchRule, type WatchSample, type WatchTargetState } from '@heapcap/state/watch';
import { formatMiB, MemorySampler, type SessionMode } from '@heapcap/capture';
import { targetToEndpoint } from '../target-endpoint.ts';
import { ProfileKeeper } from './profiles.ts';

/** Watcher settings; see HEAPCAP_WATCH_* in docs/configuration.md. */
export interface WatcherSettings {
  intervalMs: number;
  /** Sample every other registered target this often (0: only the watched ones). */
  sampleIntervalMs?: number;
  retentionMs: number;
  /** Length of the fallback sampling profile. */
  samplingMs: number;
  /** HEAPCAP_PROFILE_*: the default continuous allocation profile (everyMs 0: only targets and rules that ask). */
  profile?: { everyMs: number; samplingIntervalBytes: number };
}

export interface WatcherDeps {
  queue: HeapcapQueue;
  log: Logger;
  settings: WatcherSettings;
  /** HEAPCAP_WORKER_PLACEMENTS of this process (default `*`). */
  placements?: readonly string[] | undefined;
  /** The lease holder's name; default `<pid>-<random>`. */
  id: string;
  /** How the sampler holds its connection (default persistent; the bench compares both). */
  sessionMode?: SessionMode | undefined;
}

/**
 * When a target without samples is first due: the next instant at or after `now` that falls at the target's own
 * offset inside a window (a hash of its id), so a watcher's first samples spread evenly over the window.
 */
export function firstDue(targetId: string, now: number, windowMs: number): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < targetId.length; i++) h = Math.imul(h ^ targetId.charCodeAt(i), 0x01000193) >>> 0;
  const offset = h % windowMs;
  return now + ((offset - (now % windowMs) + windowMs) % windowMs);
}

/** The spacing of first samples: 1,000 new targets take 50 s to be first sampled, 3 new targets 150 ms. */
export const FIRST_SAMPLE_SPACING_MS = 50;

/**
 * The window over which `count` targets without samples get their first sample: wide enough that they do not
 * all connect on one tick, never wider than the interval, and short for a few targets (a console opened on a
 * new deployment shows a curve within seconds, not after up to one interval).
 */
export function firstSampleWindow(count: number, everyMs: number): number {
  return Math.max(1, Math.min(everyMs, count * FIRST_SAMPLE_SPACING_MS));
}

/** How much of a late timer's delay the next sample makes up (a fraction of the interval): see #schedule. */
const MAX_CATCH_UP = 0.05;

/** The window of samples a watch capture links to: the minutes that led to it. */
const LINKED_WINDOW_MS = 10 * 60_000;

type State = 'created' | 'running' | 'closing' | 'closed';

interface Watched {
  target: Target;
  rules: WatchRule[];
  /** The continuous allocation profile it gets (profiles.ts), or null. */
  profile: EffectiveProfile | null;
}

/** Runs the watch rules of the targets this process may reach. */
export class Watcher {
  readonly id: string;
  readonly #deps: WatcherDeps;
  readonly #log: Logger;
  /** Per target: its sampler, and the endpoint it was made for. */
  readonly #samplers = new Map<string, { key: string; sampler: MemorySampler }>();
  /** When each held target was last sampled here (ms). */
  readonly #lastSampled = new Map<string, number>();
  /** Targets with a sample (and its rule steps) in flight. */
  readonly #busy = new Map<string, Promise<void>>();
  /** Per held target: the timer of its next sample and when that sample is due (ms). */
  readonly #timers = new Map<string, { due: number; timer: NodeJS.Timeout }>();
  /** What the last tick found watched here (a timer samples with it). */
  #watchedNow = new Map<string, Watched>();
  #held = new Set<string>();
  #state: State = 'created';
  #timer: NodeJS.Timeout | undefined;
  #ticking = false;
  #closing: Promise<void> | undefined;
  /** Continuous allocation profiles of the held targets. */
  readonly #profiles: ProfileKeeper;
  /** Sampling errors already logged per target (logged once until a sample succeeds again). */
  readonly #failing = new Set<string>();

  constructor(deps: WatcherDeps) {
    this.#deps = deps;
    this.id = deps.id;
    this.#log = deps.log;
    this.#profiles = new ProfileKeeper({ queue: deps.queue, log: deps.log, id: deps.id, commandMs: Math.min(5_000, deps.settings.intervalMs) });
  }

  get state(): State {
    return this.#state;
  }

  /** The targets whose continuous profile sampler this watcher keeps on now. */
  get profiling(): string[] {
    return this.#profiles.profiling;
  }

  /** The targets this watcher samples now (it holds their leases). */
  get sampling(): ReadonlySet<string> {
    return this.#held;
  }

  /**
   * The lease tick: a quarter of the watch interval (leases last one interval). Samples do not wait for a tick: each
   * has a timer at its due time (#schedule), so a target is sampled at its own interval however the tick falls (a
   * 2 s sample interval under a 15 s watch interval gave samples 3.75 s apart, one per tick).
   */
  get #tickMs(): number {
    return Math.max(25, Math.floor(this.#deps.settings.intervalMs / 4));
  }

  /** Start ticking (the first tick runs at once). */
  start(): void {
    if (this.#state !== 'created') throw new Error(`cannot start a watcher that is ${this.#state}`);
    this.#state = 'running';
    this.#timer = setInterval(() => void this.#tick(), this.#tickMs);
    void this.#tick();
    this.#log.info({ intervalMs: this.#deps.settings.intervalMs, watcher: this.id, placements: this.#deps.placements ?? ['*'] }, 'watcher started');
  }

  /**
   * What this process samples now: enabled rules × the registered targets it may reach, and with
   * HEAPCAP_SAMPLE_INTERVAL every other target it may reach (no rules: its samples only feed the curves).
   */
  async #watched(): Promise<Map<string, Watched>> {
    const { queue } = this.#deps;
    const placements = this.#deps.placements ?? ['*'];
    const sampleAll = (this.#deps.settings.sampleIntervalMs ?? 0) > 0;
    const rules = (await queue.watch.list()).filter((r) => r.enabled);
    const out = new Map<string, Watched>();
    const targets = (await queue.targets.list()).map((e) => e.target).filter((t) => t.placement === undefined || coversPlacement(placements, t.placement));
    if (sampleAll) for (const target of targets) out.set(target.id, { target, rules: [], profile: null });
    for (const rule of rules) {
      for (const target of watchedBy(rule, targets)) {
        const w = out.get(target.id) ?? { target, rules: [], profile: null };
        w.rules.push(rule);
        out.set(target.id, w);
      }
    }
    // A target with a continuous profile is held (and sampled) even when no rule watches it.
    const fallback = this.#deps.settings.profile ?? { everyMs: 0, samplingIntervalBytes: 0 };
    for (const target of targets) {
      const w = out.get(target.id) ?? { target, rules: [], profile: null };
      w.profile = effectiveProfile(target, w.rules, fallback);
      if (w.profile !== null) out.set(target.id, w);
    }
    return out;
  }

  async #tick(): Promise<void> {
    if (this.#ticking || this.#state !== 'running') return;
    this.#ticking = true;
    try {
      const watched = await this.#watched();
      const { queue, settings } = this.#deps;
      // Let go of what is no longer watched here.
      const gone = [...this.#held].filter((id) => !watched.has(id));
      if (gone.length > 0) {
        await queue.watch.release(gone, this.id);
        for (const id of gone) await this.#forget(id);
      }
      // A profiled target no longer watched here left the registry (or this watcher's reach, or lost its profile and
      // every rule): its sampler stops, nobody would read it.
      for (const id of this.#profiles.held()) if (!watched.has(id)) await this.#profiles.drop(id, 'gone');
      this.#held = await queue.watch.lease([...watched.keys()], this.id, settings.intervalMs);
      for (const id of watched.keys()) if (!this.#held.has(id) && this.#samplers.has(id)) await this.#forget(id);
      await this.#keepProfiles(watched);
      // A target taken over (from a process that stopped or restarted, or at this one's start) is next sampled
      // one interval after its last stored sample, not at once: a handover adds no sample in between.
      // Asked once per takeover: a target without samples is not asked about again while it waits for its first
      // sample (10,000 targets sampled late asked 20,000 times a minute).
      const taken = [...this.#held].filter((id) => !this.#lastSampled.has(id));
      const last = await queue.watch.lastSampleTimes(taken);
      const now = Date.now();
      // A target without samples is due at its own offset inside a window, not at once: 10,000 new targets due
      // together made every session connect on the same tick (5 s connect timeout), and no sample landed in the first
      // minute. The window grows with the number of new targets (up to the interval), so a few new targets are
      // sampled within a second. Its next samples follow one interval after each, so they keep that offset.
      const fresh = taken.filter((id) => !last.has(id)).length;
      for (const id of taken) {
        const every = this.#every(watched.get(id)!);
        this.#lastSampled.set(id, last.get(id) ?? firstDue(id, now, firstSampleWindow(fresh, every)) - every);
      }
      this.#watchedNow = watched;
      for (const id of this.#held) {
        if (this.#busy.has(id)) continue;
        const due = (this.#lastSampled.get(id) ?? 0) + this.#every(watched.get(id)!);
        const planned = this.#timers.get(id);
        // A rule that now watches the target can make its interval shorter: the earlier due time wins.
        if (planned === undefined || due < planned.due) this.#schedule(id, due);
      }
    } catch (err) {
      this.#log.warn({ err }, 'watch tick failed; the next tick tries again');
    } finally {
      this.#ticking = false;
    }
  }

  /** Keep the sampler on in each held target with a profile; stop it where the profile is off or the lease went elsewhere. */
  async #keepProfiles(watched: Map<string, Watched>): Promise<void> {
    for (const id of this.#profiles.held()) {
      if (!this.#held.has(id)) await this.#profiles.drop(id, 'released');
      else if (watched.get(id)?.profile === null) await this.#profiles.drop(id, 'off');
    }
    const keep: Promise<void>[] = [];
    for (const id of this.#held) {
      const w = watched.get(id);
      if (w !== undefined && w.profile !== null) keep.push(this.#profiles.keep(w.target, w.profile));
    }
    await Promise.all(keep);
  }

  /**
   * A target's sample interval: HEAPCAP_SAMPLE_INTERVAL for every target when it is on, the faster of it and the watch
   * interval for a target a rule watches (being watched never makes a target's curve coarser); the watch interval when
   * only watched targets are sampled.
   */
  #every(w: Watched): number {
    const { intervalMs, sampleIntervalMs } = this.#deps.settings;
    if (sampleIntervalMs === undefined || sampleIntervalMs <= 0) return intervalMs;
    return w.rules.length > 0 ? Math.min(intervalMs, sampleIntervalMs) : sampleIntervalMs;
  }

  /**
   * Sample `id` at `due` (at once when that has passed). The next sample is due one interval after this one's due time,
   * not after when its timer fired or its sample ended, so the delays of timers and samples do not add up: samples stay
   * one interval apart on average, each late by the timer's delay only (bench-free: watch-spacing.test.ts measures it).
   */
  #schedule(id: string, due: number): void {
    clearTimeout(this.#timers.get(id)?.timer);
    const timer = setTimeout(() => {
      this.#timers.delete(id);
      const w = this.#watchedNow.get(id);
      if (this.#state !== 'running' || !this.#held.has(id) || w === undefined || this.#busy.has(id)) return;
      const now = Date.now();
      const every = this.#every(w);
      // A timer that fired late catches up by at most 5 % of the interval: no two samples much closer than one interval
      // (a handover test holds gaps >= 0.85 interval), and a timer late by more than an interval (a blocked event
      // loop) starts again from about now, without a burst of catch-up samples.
      const at = Math.max(due, now - every * MAX_CATCH_UP);
      this.#lastSampled.set(id, at);
      const run = this.#sampleAndStep(w).finally(() => {
        this.#busy.delete(id);
        if (this.#state === 'running' && this.#held.has(id) && this.#watchedNow.has(id)) this.#schedule(id, at + this.#every(this.#watchedNow.get(id)!));
      });
      this.#busy.set(id, run);
    }, Math.max(0, due - Date.now()));
    this.#timers.set(id, { due, timer });
  }

  async #forget(targetId: string): Promise<void> {
    clearTimeout(this.#timers.get(targetId)?.timer);
    this.#timers.delete(targetId);
    const s = this.#samplers.get(targetId);
    this.#samplers.delete(targetId);
    this.#lastSampled.delete(targetId);
    await s?.sampler.close();
  }

  /** The target's sampler; a new one when the registry entry now points elsewhere (the old session is closed). */
  async #sampler(target: Target): Promise<MemorySampler> {
    const endpoint = targetToEndpoint(target);
    const key = JSON.stringify(endpoint);
    const current = this.#samplers.get(target.id);
    if (current !== undefined && current.key === key) return current.sampler;
    await current?.sampler.close();
    const { intervalMs } = this.#deps.settings;
    // A sample must finish inside its interval; a target paused by a snapshot answers late.
    const sampler = new MemorySampler(endpoint, this.#deps.sessionMode ?? 'persistent', { connectMs: Math.min(5_000, intervalMs), commandMs: Math.min(5_000, intervalMs) });
    this.#samplers.set(target.id, { key, sampler });
    return sampler;
  }

  async #sampleAndStep(w: Watched): Promise<void> {
    const { queue, settings } = this.#deps;
    const id = w.target.id;
    let sample: WatchSample;
    try {
      sample = await (await this.#sampler(w.target)).sample();
      if (this.#failing.delete(id)) this.#log.info({ targetId: id }, 'watched target answers again');
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      if (!this.#failing.has(id)) this.#log.warn({ targetId: id, err: message }, 'could not sample a watched target; will keep trying at each interval');
      this.#failing.add(id);
      // Stored, so that the console, `heapcap targets list` and /metrics say the target is down and why.
      const code = typeof (err as { code?: unknown }).code === 'string' ? (err as { code: string }).code : 'internal';
      await queue.watch.recordDown(id, code, message, Date.now(), settings.retentionMs).catch((e: unknown) => this.#log.warn({ targetId: id, err: e }, 'could not record a failed sample'));
      return;
    }
    try {
      await queue.watch.addSample(id, sample, Math.ceil(settings.retentionMs / this.#every(w)), settings.retentionMs);
      for (const rule of w.rules) await this.#stepRule(rule, w.target, sample);
    } catch (err) {
      this.#log.warn({ targetId: id, err }, 'could not store a sample or a rule state; the next sample tries again');
    }
  }

  async #stepRule(rule: WatchRule, target: Target, sample: WatchSample): Promise<void> {
    const { queue } = this.#deps;
    let state = (await queue.watch.state(rule.id, target.id)) ?? initialWatchState(target.id, sample.t);
    state = await this.#follow(rule, target, state);
    let base: WatchSample | null = null;
    if (rule.when.metric === 'heapGrowthBytes') {
      const since = sample.t - (rule.when.windowSeconds ?? 0) * 1000;
      base = (await queue.watch.samples(target.id, since, sample.t, 1))[0]?.sample ?? null;
      // Less than the window recorded yet: no growth to speak of.
      if (base !== null && base.t > since + this.#deps.settings.intervalMs) base = null;
    }
    const value = metricValue(rule, sample, base);
    const { next, action } = watchStep(rule, state, value, sample.t);
    state = next;
    if (action === 'fire') state = await this.#fire(rule, target, state, sample, value ?? 0);
    else if (action === 'suppress_cooldown') {
      await this.#count('suppressed_cooldown');
      this.#log.info({ ruleId: rule.id, targetId: target.id, value, firedAt: state.firedAt }, 'watch rule condition holds again during its cooldown: not firing');
    }
    await queue.watch.setState(rule.id, state);
  }

  async #count(outcome: FiringOutcome): Promise<void> {
    await this.#deps.queue.watch.countFiring(outcome).catch((err: unknown) => this.#log.warn({ err, outcome }, 'could not count a watch firing'));
  }

  #trigger(rule: WatchRule, target: Target, sample: WatchSample, value: number): Trigger {
    const since = new Date(sample.t - Math.max(LINKED_WINDOW_MS, rule.when.forSeconds * 2000)).toISOString();
    const until = new Date(sample.t).toISOString();
    const above = rule.when.metric === 'heapUsedRatio' ? String(rule.when.above) : formatMiB(rule.when.above);
    const shown = rule.when.metric === 'heapUsedRatio' ? value.toFixed(3) : formatMiB(value);
    return {
      kind: 'watch',
      who: `watch:${rule.id}`,
      reason: rule.reason ?? `${rule.when.metric} ${shown} above ${above} for ${rule.when.forSeconds} s`,
      ruleId: rule.id,
      sample: { ...sample, metric: rule.when.metric, value },
      samples: { since, until, href: `/v1/targets/${encodeURIComponent(target.id)}/samples?since=${encodeURIComponent(since)}&until=${encodeURIComponent(until)}` },
    };
  }

  async #fire(rule: WatchRule, target: Target, state: WatchTargetState, sample: WatchSample, value: number): Promise<WatchTargetState> {
    const { queue } = this.#deps;
    const log = this.#log.child({ ruleId: rule.id, targetId: target.id });
    const now = sample.t;
    const verdict = await queue.watch.tryFire(rule.id, target.id, this.id, rule.maxPerDay, now);
    if (verdict === 'not_holder' || verdict === 'gone') {
      // Another watcher holds the target now (or the rule was deleted): it decides.
      log.info({ verdict }, 'watch rule would fire, but this watcher no longer owns the target');
      return state;
    }
    const firing: Firing = { at: new Date(now).toISOString(), outcome: 'captured', sample, value };
    if (verdict === 'cap') {
      firing.outcome = 'suppressed_cap';
      firing.message = `maxPerDay (${rule.maxPerDay}) reached for this target in the last 24 hours`;
      await this.#count('suppressed_cap');
      log.warn({ value, maxPerDay: rule.maxPerDay }, 'watch rule fired, suppressed by its daily cap');
      return watchFired(state, now, firing);
    }
    try {
      // A snapshot unless the rule asks for a sampling profile itself (capture.options.kind).
      const res = await queue.requestCapture({ targetId: target.id, options: rule.capture.options ?? {}, trigger: this.#trigger(rule, target, sample, value) });
      firing.captureId = res.record.id;
      await this.#count('captured');
      log.warn({ value, captureId: res.record.id, kind: res.record.options.kind, coalesced: res.coalesced }, `watch rule fired: ${res.record.options.kind} requested`);
    } catch (err) {
      firing.outcome = 'failed';
      firing.message = err instanceof Error ? err.message : String(err);
      await this.#count('failed');
      log.error({ err, value }, 'watch rule fired, but the capture could not be requested');
    }
    return watchFired(state, now, firing);
  }

  /**
   * Follow the last firing's snapshot: when the headroom gate refused it,
   * take an allocation sampling profile instead; when it failed otherwise,
   * say so on the rule. Runs at each sample until the capture has ended.
   */
  async #follow(rule: WatchRule, target: Target, state: WatchTargetState): Promise<WatchTargetState> {
    const f = state.lastFiring;
    if (f === null || f.outcome !== 'captured' || f.captureId === undefined) return state;
    const { queue, settings } = this.#deps;
    const record = await queue.getCapture(f.captureId);
    if (record !== null && !isTerminal(record)) return state;
    const log = this.#log.child({ ruleId: rule.id, targetId: target.id, captureId: f.captureId });
    const done = (patch: Partial<Firing>): WatchTargetState => ({ ...state, lastFiring: { ...f, ...patch } });
    if (record === null || record.status === 'succeeded' || record.status === 'expired') return done({ outcome: 'captured', message: record === null ? 'the capture record is gone' : `snapshot ${record.status}` });
    if (record.error?.code !== 'insufficient_headroom' || record.options.kind !== 'snapshot') {
      await this.#count('failed');
      log.warn({ status: record.status, code: record.error?.code }, 'the snapshot of a watch firing did not succeed');
      return done({ outcome: 'failed', message: `snapshot ${record.status}${record.error === null ? '' : `: ${record.error.code}: ${record.error.message}`}` });
    }
    await this.#count('refused_headroom');
    log.warn({ message: record.error.message }, 'the headroom gate refused the snapshot of a watch firing: taking an allocation sampling profile instead');
    const samplingSeconds = rule.capture.samplingSeconds ?? Math.round(settings.samplingMs / 1000);
    try {
      const trigger: Trigger = { ...record.trigger, fallbackOf: record.id };
      const res = await queue.requestCapture({ targetId: target.id, options: { ...rule.capture.options, kind: 'sampling', samplingSeconds }, trigger, force: true });
      await this.#count('sampled');
      log.warn({ samplingCaptureId: res.record.id, samplingSeconds }, 'allocation sampling profile requested');
      return done({ outcome: 'sampled', samplingCaptureId: res.record.id, message: `the headroom gate refused the snapshot (${record.error.message}); a ${samplingSeconds} s allocation sampling profile was taken instead` });
    } catch (err) {
      await this.#count('failed');
      log.error({ err }, 'could not request the fallback sampling profile');
      return done({ outcome: 'failed', message: `the headroom gate refused the snapshot and the sampling profile could not be requested: ${err instanceof Error ? err.message : String(err)}` });
    }
  }

  /** Stop ticking, let samples in flight end, close sessions and hand the leases back at once. Idempotent. */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    this.#state = 'closing';
    clearInterval(this.#timer);
    for (const { timer } of this.#timers.values()) clearTimeout(timer);
    this.#timers.clear();
    await Promise.allSettled([...this.#busy.values()]);
    const held = [...this.#held];
    for (const id of [...this.#samplers.keys()]) await this.#forget(id);
    await this.#profiles.close();
    await this.#deps.queue.watch.release(held, this.id).catch((err: unknown) => this.#log.warn({ err }, 'could not hand back the watch leases; they expire within one interval'));
    this.#state = 'closed';
  }
}
