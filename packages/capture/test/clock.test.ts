/** PhaseClock: contiguous phases whose rounded durations add up to the total. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { PHASES, PhaseClock, type Phase, type PhaseTimings } from '../src/index.ts';

/** The timings of a clock made at 0 whose phases are entered at `marks`, stopped at `stop`. */
function timed(marks: [Phase, number][], stop: number): PhaseTimings {
  const clock = new PhaseClock(0);
  for (const [phase, at] of marks) clock.enter(phase, at);
  clock.stop(stop);
  return clock.timings();
}

void describe('PhaseClock', () => {
  void test('each phase lasts until the next one starts; the sum is the total', () => {
    const clock = new PhaseClock(1000);
    const starts = [1000, 1012.34, 1020.06, 1170.55, 1170.85, 1171.04, 4321.96, 5000.01];
    PHASES.forEach((phase, i) => clock.enter(phase, starts[i]));
    clock.stop(5432.19);
    const t = clock.timings();
    assert.deepEqual(t, {
      total: 4432.2,
      connect: 12.3,
      preflight: 7.7,
      warm: 150.5,
      enable: 0.3,
      gc: 0.2,
      generate: 3150.9,
      serialize: 678.1,
      sink: 432.2,
    });
    const sum = PHASES.reduce((acc, p) => acc + t[p], 0);
    // Rounded one by one to 0.1 ms: at most 0.05 ms off per phase.
    assert.ok(Math.abs(sum - t.total) <= 0.05 * PHASES.length + 1e-9, `sum ${sum} vs total ${t.total}`);
  });

  void test('the first phase starts with the clock: time before it is in it, so the sum is still the total', () => {
    // Created at 0, its first phase entered at 14 (the thread preempted between the two reads of the clock).
    const t = timed(
      [
        ['connect', 14],
        ['preflight', 20],
        ['generate', 30],
        ['serialize', 100],
        ['sink', 150],
      ],
      160,
    );
    assert.equal(t.connect, 20);
    assert.equal(t.total, 160);
    assert.equal(PHASES.reduce((acc, p) => acc + t[p], 0), t.total);
  });

  void test('phases never entered take 0 ms and the time goes to the phase before', () => {
    // No warm, no gc: preflight runs on until generate.
    const t = timed(
      [
        ['connect', 0],
        ['preflight', 10],
        ['generate', 30],
        ['serialize', 100],
        ['sink', 150],
      ],
      160,
    );
    assert.equal(t.warm, 0);
    assert.equal(t.gc, 0);
    assert.equal(t.preflight, 20);
    assert.equal(PHASES.reduce((acc, p) => acc + t[p], 0), t.total);
  });

  void test('a failed capture: the current phase is known and its time runs to stop()', () => {
    const clock = new PhaseClock(0);
    clock.enter('connect', 0);
    clock.enter('preflight', 5);
    clock.enter('warm', 9);
    clock.enter('gc', 12);
    clock.enter('generate', 13);
    clock.enter('serialize', 40);
    assert.equal(clock.current, 'serialize');
    clock.stop(55);
    clock.stop(999); // the first stop wins
    const t = clock.timings();
    assert.equal(t.serialize, 15);
    assert.equal(t.sink, 0);
    assert.equal(t.total, 55);
  });
});
