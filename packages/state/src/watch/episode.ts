/**
 * The episode logic of a watch rule for one target, as a pure step from one
 * sample to the next (the watcher holding the target's lease runs it and
 * stores the state in Redis, so whoever takes the lease over carries on).
 *
 *   ok ──condition──▶ pending ──held forSeconds──▶ fire ─▶ firing
 *   firing ──cleared──▶ cooling (or ok when the cooldown already passed)
 *   cooling ──cooldown passed──▶ ok, or pending when the condition holds again
 *
 * A firing consumes the episode whatever came of it (a capture, a refusal, or
 * the daily cap): the rule never retries inside one episode, so a target
 * stuck above the threshold is captured once, not once per sample.
 */
import type { WatchRule, WatchSample, WatchTargetState } from './schema.ts';

/** The value of `rule`'s metric for `sample`; `growthBase` is the oldest sample inside the window (heapGrowthBytes). Null: not reported. */
export function metricValue(rule: Pick<WatchRule, 'when'>, sample: WatchSample, growthBase?: WatchSample | null): number | null {
  switch (rule.when.metric) {
    case 'heapUsedRatio':
      return sample.heapLimitBytes === null || sample.heapLimitBytes <= 0 ? null : sample.heapUsedBytes / sample.heapLimitBytes;
    case 'heapUsedBytes':
      return sample.heapUsedBytes;
    case 'rssBytes':
      return sample.rssBytes;
    case 'heapGrowthBytes':
      return growthBase === undefined || growthBase === null ? null : sample.heapUsedBytes - growthBase.heapUsedBytes;
  }
}

/** What the watcher must do after a step. */
export type EpisodeAction = 'none' | 'fire' | 'suppress_cooldown';

/** A fresh state (the rule has not seen the target yet). */
export function initialState(targetId: string, now: number): WatchTargetState {
  return { targetId, state: 'ok', since: now, firedAt: null, suppressedThisEpisode: false, value: null, lastSampleAt: null, lastFiring: null };
}

/** The next state of `prev` after a sample whose metric value is `value` (null: unknown, counts as not above). */
export function step(rule: Pick<WatchRule, 'when' | 'cooldownSeconds'>, prev: WatchTargetState, value: number | null, now: number): { next: WatchTargetState; action: EpisodeAction } {
  const above = value !== null && value > rule.when.above;
  const cooldownOver = prev.firedAt === null || now - prev.firedAt >= rule.cooldownSeconds * 1000;
  const base: WatchTargetState = { ...prev, value, lastSampleAt: now };
  const to = (state: WatchTargetState['state'], extra: Partial<WatchTargetState> = {}): WatchTargetState => ({ ...base, state, since: state === prev.state ? prev.since : now, ...extra });
  switch (prev.state) {
    case 'ok':
      return { next: above ? to('pending', { suppressedThisEpisode: false }) : to('ok'), action: 'none' };
    case 'pending':
      if (!above) return { next: to('ok'), action: 'none' };
      if (now - prev.since >= rule.when.forSeconds * 1000) return { next: base, action: 'fire' };
      return { next: to('pending'), action: 'none' };
    case 'firing':
      if (above) return { next: to('firing'), action: 'none' };
      return { next: cooldownOver ? to('ok') : to('cooling', { suppressedThisEpisode: false }), action: 'none' };
    case 'cooling':
      if (cooldownOver) return { next: above ? to('pending', { suppressedThisEpisode: false }) : to('ok'), action: 'none' };
      if (!above) return { next: to('cooling', { suppressedThisEpisode: false }), action: 'none' };
      if (!prev.suppressedThisEpisode) return { next: to('cooling', { suppressedThisEpisode: true }), action: 'suppress_cooldown' };
      return { next: to('cooling'), action: 'none' };
  }
}

/** The state after the rule fired at `now` (whatever the outcome: the episode is consumed). */
export function fired(state: WatchTargetState, now: number, lastFiring: WatchTargetState['lastFiring']): WatchTargetState {
  return { ...state, state: 'firing', since: now, firedAt: now, lastFiring };
}
