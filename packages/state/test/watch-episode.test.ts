/** The episode logic of watch rules, step by step (pure: no Redis), and the metric values. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { initialWatchState, metricValue, watchFired, watchStep, type WatchSample, type WatchTargetState } from '@heapcap/state/watch';

const rule = { when: { metric: 'heapUsedRatio' as const, above: 0.5, forSeconds: 2 }, cooldownSeconds: 10 };

/** Feed values at 1 s steps from t0; returns the states' names and the actions. */
function run(values: number[], start: WatchTargetState = initialWatchState('t', 0), t0 = 0): { states: string[]; actions: string[]; last: WatchTargetState } {
  let s = start;
  const states: string[] = [];
  const actions: string[] = [];
  values.forEach((v, i) => {
    const now = t0 + i * 1000;
    const { next, action } = watchStep(rule, s, v, now);
    s = action === 'fire' ? watchFired(next, now, null) : next;
    states.push(s.state);
    actions.push(action);
  });
  return { states, actions, last: s };
}

void test('fires once when the condition held forSeconds, not again while it holds', () => {
  const r = run([0.1, 0.6, 0.6, 0.6, 0.7, 0.8, 0.9]);
  assert.deepEqual(r.actions, ['none', 'none', 'none', 'fire', 'none', 'none', 'none']);
  assert.deepEqual(r.states, ['ok', 'pending', 'pending', 'firing', 'firing', 'firing', 'firing']);
});

void test('a dip below resets pending: the condition must hold forSeconds without a break', () => {
  const r = run([0.6, 0.6, 0.4, 0.6, 0.6, 0.6]);
  assert.deepEqual(r.actions, ['none', 'none', 'none', 'none', 'none', 'fire']);
});

void test('cooldown: cleared then above again within it is suppressed once; after it, a new episode fires', () => {
  // fire at t=3 s; cooldown 10 s → until t=13 s.
  const r = run([0.6, 0.6, 0.6, 0.6, 0.4, 0.6, 0.6, 0.6, 0.4, 0.6, 0.6, 0.4, 0.4, 0.4, 0.6, 0.6, 0.6]);
  assert.equal(r.actions.filter((a) => a === 'fire').length, 2);
  // One suppression per episode during the cooldown (two episodes above within it).
  assert.deepEqual(r.actions.map((a, i) => (a === 'suppress_cooldown' ? i : -1)).filter((i) => i >= 0), [5, 9]);
  assert.equal(r.actions.lastIndexOf('fire'), 16, 'the new episode starts after the cooldown and holds forSeconds');
});

void test('cleared after the cooldown already passed goes straight to ok', () => {
  const fired = run([0.6, 0.6, 0.6]).last;
  const { next } = watchStep(rule, fired, 0.1, 20_000);
  assert.equal(next.state, 'ok');
});

void test('an unknown value counts as not above', () => {
  const { next } = watchStep(rule, initialWatchState('t', 0), null, 0);
  assert.equal(next.state, 'ok');
});

void test('metric values', () => {
  const s: WatchSample = { t: 0, heapUsedBytes: 50, heapTotalBytes: 80, heapLimitBytes: 200, rssBytes: 300 };
  assert.equal(metricValue({ when: { metric: 'heapUsedRatio', above: 0.5, forSeconds: 1 } }, s), 0.25);
  assert.equal(metricValue({ when: { metric: 'heapUsedRatio', above: 0.5, forSeconds: 1 } }, { ...s, heapLimitBytes: null }), null);
  assert.equal(metricValue({ when: { metric: 'heapUsedBytes', above: 1, forSeconds: 1 } }, s), 50);
  assert.equal(metricValue({ when: { metric: 'rssBytes', above: 1, forSeconds: 1 } }, s), 300);
  assert.equal(metricValue({ when: { metric: 'rssBytes', above: 1, forSeconds: 1 } }, { ...s, rssBytes: null }), null);
  assert.equal(metricValue({ when: { metric: 'heapGrowthBytes', above: 1, forSeconds: 1, windowSeconds: 60 } }, s, { ...s, heapUsedBytes: 20 }), 30);
  assert.equal(metricValue({ when: { metric: 'heapGrowthBytes', above: 1, forSeconds: 1, windowSeconds: 60 } }, s, null), null);
});
