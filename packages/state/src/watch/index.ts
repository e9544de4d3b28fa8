/** @heapcap/state/watch — Watch rules: specs and checks, the episode state machine, samples and the store (leases, firings, samples). */
export {
  WatchRuleSpecSchema,
  WatchRuleSchema,
  WatchWhenSchema,
  WatchSampleSchema,
  WatchTargetStateSchema,
  FiringSchema,
  WATCH_METRICS,
  WATCH_STATES,
  FIRING_OUTCOMES,
  DEFAULT_COOLDOWN_SECONDS,
  DEFAULT_MAX_PER_DAY,
  type WatchRuleSpec,
  type WatchRule,
  type WatchWhen,
  type WatchMetric,
  type WatchSample,
  type WatchTargetState,
  type WatchStateName,
  type Firing,
  type FiringOutcome,
} from './schema.ts';
export { DOWN_REASONS, TargetDownSchema, downReason, type DownReason, type TargetDown } from './down.ts';
export { WatchStore, type StoredSample } from './store.ts';
export { checkWatchRule, buildWatchRule, newWatchRuleId, watchedBy, type WatchCheckContext, type WatchIssue } from './check.ts';
export { metricValue, step as watchStep, fired as watchFired, initialState as initialWatchState, type EpisodeAction } from './episode.ts';
export { ProfileStateSchema, type ProfileState } from './profile-state.ts';
