/**
 * `trigger --wait`'s view of a queued capture whose attempt failed (issue 40, item 5): the attempt and its error
 * with the seconds to its retry, counted in this process's clock from when the failure was first seen (a worker
 * whose clock is an hour off changes nothing), and a plain line for each new failed attempt at once.
 */
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';
import { ProgressDisplay, RecordProgress, type RecordProgressView } from '../src/progress.ts';
import { formatRecord } from '../src/status-format.ts';

/** A queued record whose attempt `n` failed at `failedAt` (the worker's clock) with a retry due `delayMs` later. */
function queuedAfter(n: number, failedAt: number, delayMs: number): RecordProgressView {
  return {
    status: 'queued',
    failedAttempts: [{ attempt: n, of: 3, code: 'target_unreachable', message: 'cannot reach an inspector at 127.0.0.1:9 (ECONNREFUSED)', failedAt: new Date(failedAt).toISOString(), nextAttemptAt: new Date(failedAt + delayMs).toISOString() }],
  };
}

void test('a queued capture after a failed attempt shows the attempt, its error and the seconds to the retry, whatever the worker’s clock', () => {
  const live = new RecordProgress();
  const now = 1_800_000_000_000;
  // The worker's clock is an hour ahead: only the delay (next − failed) counts, from when this process saw it.
  const record = queuedAfter(1, now + 3_600_000, 5_000);
  assert.equal(live.state(record, now)?.note, 'attempt 1 of 3 failed: target_unreachable (cannot reach an inspector at 127.0.0.1:9 (ECONNREFUSED)); retrying in 5 s');
  assert.equal(live.state(record, now + 1_200)?.note?.endsWith('retrying in 4 s'), true);
  assert.equal(live.state(record, now + 5_000)?.note?.endsWith('retrying now'), true);
  assert.equal(new RecordProgress().state({ status: 'queued' }, now)?.note, 'waiting for a worker');
});

void test('off a terminal, each new failed attempt prints a line at once, in the quiet first seconds too', () => {
  const out = new PassThrough();
  let text = '';
  out.setEncoding('utf8').on('data', (d: string) => (text += d));
  const display = new ProgressDisplay(out, false);
  const live = new RecordProgress();
  const now = Date.now();
  display.set(live.state({ status: 'queued' }, now)!);
  assert.equal(text, '', 'nothing in the quiet first seconds while it only waits for a worker');
  display.set(live.state(queuedAfter(1, now, 5_000), now)!);
  display.set(live.state(queuedAfter(1, now, 5_000), now)!);
  display.set(live.state(queuedAfter(2, now + 6_000, 10_000), now)!);
  display.stop();
  const lines = text.split('\n').filter((l) => l !== '');
  assert.equal(lines.length, 2, text);
  assert.match(lines[0]!, /^queued +\d+\.\d s \(total \d+\.\d s\)  attempt 1 of 3 failed: target_unreachable \(.*ECONNREFUSED\)\); retrying in 5 s…$/);
  assert.match(lines[1]!, /attempt 2 of 3 failed: .*retrying in 10 s…$/);
});

void test('the final record lists the retried attempts beside the last error', () => {
  const text = formatRecord({
    id: 'c1',
    targetId: 'dead-1',
    status: 'failed',
    attempts: 2,
    error: { code: 'target_unreachable', message: 'cannot reach an inspector at 127.0.0.1:9 (ECONNREFUSED)' },
    failedAttempts: [
      { attempt: 1, of: 2, code: 'target_unreachable', message: 'cannot reach an inspector at 127.0.0.1:9 (ECONNREFUSED)', nextAttemptAt: '2026-11-29T00:00:05.000Z' },
      { attempt: 2, of: 2, code: 'target_unreachable', message: 'cannot reach an inspector at 127.0.0.1:9 (ECONNREFUSED)', nextAttemptAt: null },
    ],
  });
  assert.match(text, /\n  retried   attempt 1 of 2 failed: target_unreachable \(cannot reach/);
  assert.doesNotMatch(text, /attempt 2 of 2 failed/);
});
