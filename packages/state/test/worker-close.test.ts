/**
 * The patch of BullMQ's private Worker#retryIfFailed (src/worker-close.ts): these fail the day BullMQ changes
 * that method's shape (the patch would then silently do nothing, and `serve` could hang on exit again with
 * Redis paused) or fixes the loop itself (then upgrade and delete the patch). docs/operations.md, "Shutdown".
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Worker } from 'bullmq';
import { bullmqRetryIfFailed } from '../src/worker-close.ts';

/** What ioredis rejects with once its connection is closed: BullMQ counts it as a connection error and retries. */
const connectionClosed = (): Error => new Error('Connection is closed.');

type Retry = (this: Worker, fn: () => Promise<unknown>, opts: { delayInMs: number; maxRetries?: number }) => Promise<unknown>;

/**
 * A Worker without its constructor: no connection, no handles keeping the test alive. retryIfFailed reads only
 * `closing`, `closed`, `paused` and the delay helpers of the instance.
 */
function idleWorker(closing: boolean): Worker {
  const worker = Object.create(Worker.prototype) as Worker;
  Object.assign(worker, { closing: closing ? Promise.resolve() : undefined, closed: false, paused: false });
  return worker;
}

void test("BullMQ still has Worker#retryIfFailed(fn, opts) and our patch sits over it", () => {
  const proto = Worker.prototype as unknown as { retryIfFailed?: Retry };
  assert.equal(typeof bullmqRetryIfFailed, 'function', 'Worker.prototype.retryIfFailed is gone: check whether the close loop is fixed, then delete or port the patch');
  assert.equal(bullmqRetryIfFailed?.length, 2, '(fn, opts)');
  assert.equal(proto.retryIfFailed?.name, 'boundedWhileClosing');
});

void test('unpatched, BullMQ retries a closed connection without end and without delay while the worker closes (the bug the patch bounds)', async () => {
  const worker = idleWorker(true);
  let calls = 0;
  const started = Date.now();
  // A 1 s delay would be slept between tries if BullMQ honoured it while closing: 200 tries take well under that.
  const result = await bullmqRetryIfFailed!.call(worker, () => (++calls < 200 ? Promise.reject(connectionClosed()) : Promise.resolve('answered')), { delayInMs: 1_000 });
  assert.equal(result, 'answered');
  assert.equal(calls, 200, 'BullMQ now gives up by itself: see whether the patch can go');
  assert.ok(Date.now() - started < 1_000, `no delay between tries while closing (${Date.now() - started} ms)`);
});

void test('patched: while the worker closes, a closed connection gets three tries, then the call fails for good', async () => {
  const worker = idleWorker(true);
  const retry = (Worker.prototype as unknown as { retryIfFailed: Retry }).retryIfFailed;
  let calls = 0;
  await assert.rejects(
    retry.call(worker, () => {
      calls++;
      return Promise.reject(connectionClosed());
    }, { delayInMs: 1_000 }),
    /gave up on a Redis call after 3 tries while the worker closes/,
  );
  assert.equal(calls, 3);
  // Not closing: the patch changes nothing (BullMQ's retries with its delay).
  const open = idleWorker(false);
  let tries = 0;
  assert.equal(await retry.call(open, () => (++tries < 2 ? Promise.reject(connectionClosed()) : Promise.resolve('ok')), { delayInMs: 10 }), 'ok');
  assert.equal(tries, 2);
});
