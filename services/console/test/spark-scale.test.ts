/** The sparkline's scale (issue 40): a flat target's noise stays a flat line; a real rise still fills the height. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sparkRange } from '../src/components/spark-scale.ts';

const MiB = 1024 * 1024;

void test('a flat 13.9 MiB heap with 200 KiB of noise uses a quarter of the height at most (it was drawn top to bottom)', () => {
  const values = [13.9, 14.0, 13.8, 14.1, 13.9].map((m) => m * MiB);
  const { lo, hi } = sparkRange(values);
  const used = (Math.max(...values) - Math.min(...values)) / (hi - lo);
  assert.ok(used <= 0.25, `the noise spans ${(used * 100).toFixed(0)} % of the height`);
  assert.ok(lo <= Math.min(...values) && hi >= Math.max(...values), 'every value is inside the scale');
});

void test('a heap that doubles still spans the whole height', () => {
  const values = [50, 60, 70, 85, 100].map((m) => m * MiB);
  const { lo, hi } = sparkRange(values);
  assert.equal(lo, 50 * MiB);
  assert.equal(hi, 100 * MiB);
});

void test('tiny heaps: at least 1 MiB of scale, never below 0', () => {
  const { lo, hi } = sparkRange([100_000, 120_000]);
  assert.ok(lo >= 0);
  assert.ok(hi - lo >= MiB);
});
