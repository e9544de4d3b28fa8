/**
 * A target without samples is first sampled at its own offset inside the interval (a hash of its id), so a
 * watcher with thousands of new targets does not connect to all of them on one tick (docs/scaling.md, the
 * sampler at 10,000 targets).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { firstDue, firstSampleWindow } from '../src/watch/watcher.ts';

void test('first samples fall inside one interval, at an offset that depends only on the target', () => {
  const every = 60_000;
  const now = 1_764_200_000_123;
  for (const id of ['a', 't-00001', 'svc/checkout-7f9c']) {
    const due = firstDue(id, now, every);
    assert.ok(due >= now && due < now + every, `${id}: due ${due - now} ms after now`);
    // Asked later (a takeover, another process), the same offset inside the interval.
    const later = firstDue(id, now + 12_345_678, every);
    assert.equal(later % every, due % every, `${id}: offset moved`);
  }
});

void test('10,000 targets spread evenly over the interval: no tenth of it holds more than 12% of the first samples', () => {
  const every = 60_000;
  const now = 1_764_200_000_000;
  const buckets = new Array<number>(10).fill(0);
  for (let i = 0; i < 10_000; i++) {
    const at = firstDue(`t-${String(i).padStart(5, '0')}`, now, every) - now;
    buckets[Math.floor(at / (every / 10))]! += 1;
  }
  assert.ok(Math.max(...buckets) <= 1_200, `first samples per tenth of the interval: ${buckets.join(', ')}`);
  assert.ok(Math.min(...buckets) >= 800, `first samples per tenth of the interval: ${buckets.join(', ')}`);
});

void test('a few new targets are first sampled within a second; thousands over the whole interval', () => {
  const every = 60_000;
  const now = 1_764_200_000_000;
  const window = firstSampleWindow(3, every);
  assert.ok(window <= 1_000, `3 new targets spread over ${window} ms`);
  for (const id of ['a', 'b', 'c']) assert.ok(firstDue(id, now, window) - now < 1_000, id);
  assert.equal(firstSampleWindow(10_000, every), every, '10,000 new targets: the whole interval');
  assert.equal(firstSampleWindow(1_000, every), 50_000);
  assert.ok(firstSampleWindow(0, every) >= 1);
});
