/**
 * Closing a BullMQ worker within a deadline, also when Redis is gone.
 *
 * `Worker.close()` waits for the running jobs, then QUITs its blocking
 * connection; with Redis down (or SIGSTOPped) that QUIT waits for a reconnect
 * that may never come, and `close(true)` called afterwards does not help:
 * BullMQ returns the first close's promise (measured: `heapcap serve` logged
 * `stopped` after 61 s of steps running into their limits, then kept
 * reconnecting until the backstop). So after the grace the worker's
 * connections are disconnected (ioredis `disconnect()`, which needs no answer
 * from Redis), and the pending QUIT fails, which ends the close.
 */
import { Worker } from 'bullmq';

/**
 * BullMQ 5.81's private Worker#retryIfFailed retries a failed Redis call
 * forever, and without its delay once the worker is closing. A job that ends
 * while its connection is closed (a shutdown during a Redis outage) then spins
 * handleFailed → moveToFailed → "Connection is closed." in microtasks, which
 * starves every timer, the service's exit backstop included. Measured: `serve`
 * alive 100 s after SIGTERM with Redis paused, its main thread at 100 % in
 * moveToFailed (about 1 run in 4 of shutdown-faults' Redis-paused case). While
 * the worker closes, a call gets three more tries; then the loop ends with an
 * error BullMQ treats as final for that call.
 */
const CLOSING_TRIES = 3;
type RetryIfFailed = (this: Worker, fn: () => Promise<unknown>, opts: object) => Promise<unknown>;
const workerProto = Worker.prototype as unknown as { retryIfFailed?: RetryIfFailed };
const retryIfFailed = workerProto.retryIfFailed;
/** BullMQ's own method, unpatched (undefined if it is gone): test/worker-close.test.ts shows it still loops, so the patch is still needed. */
export const bullmqRetryIfFailed: RetryIfFailed | undefined = retryIfFailed;
if (typeof retryIfFailed === 'function') {
  workerProto.retryIfFailed = function boundedWhileClosing(this: Worker, fn, opts) {
    const state = this as unknown as { closing?: unknown; closed?: boolean };
    let triesWhileClosing = 0;
    return retryIfFailed.call(
      this,
      () => {
        if ((state.closing !== undefined && state.closing !== null) || state.closed === true) {
          triesWhileClosing += 1;
          if (triesWhileClosing > CLOSING_TRIES) return Promise.reject(new Error(`gave up on a Redis call after ${CLOSING_TRIES} tries while the worker closes`));
        }
        return fn();
      },
      opts,
    );
  };
}

/** How a close ended: the jobs finished in time, or the connections were cut after the grace. */
export type WorkerCloseOutcome = 'closed' | 'forced';

/** What `onLate` may do before the connections are cut (e.g. cancel the running jobs and give them a moment). */
export interface CloseWorkerOptions {
  /** Time for running jobs to finish (and for a polite QUIT). */
  graceMs: number;
  /** Called once when the grace is over; its promise is awaited (bounded by `lateMs`) before the connections are cut. */
  onLate?: ((closing: Promise<void>, why: 'deadline' | 'redis_unreachable') => Promise<unknown>) | undefined;
  /** Bound on `onLate` (default 5 s). */
  lateMs?: number | undefined;
}

function within(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p.then(
      () => true,
      () => true,
    ),
    new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/** The worker's own (non-shared) blocking connection: BullMQ keeps it protected, and only it can end the pending QUIT. */
interface WithBlocking {
  blockingConnection?: { client: Promise<{ disconnect(): void }> };
}

/** ioredis disconnect() of both clients: no answer from Redis needed, and no reconnecting afterwards. */
async function cut(worker: Worker): Promise<void> {
  const blocking = (worker as unknown as WithBlocking).blockingConnection;
  const [b, c] = await Promise.all([blocking?.client, worker.client]);
  b?.disconnect();
  // The shared connection too: each of our consumers owns its own (a duplicate), and with
  // maxRetriesPerRequest null its pending commands (lock release, moveToFailed) would wait as long.
  c.disconnect();
}

/** Redis answers PING on the worker's connection within `ms` (false when down, paused or unreachable). */
async function answers(worker: Worker, ms: number): Promise<boolean> {
  let ok = false;
  const ping = (async () => {
    // Our workers run on ioredis connections (BullMQ types them as its adapter interface, without PING).
    const client = (await worker.client) as unknown as { ping(): Promise<string> };
    ok = (await client.ping()) === 'PONG';
  })();
  ping.catch(() => undefined);
  return (await within(ping, ms)) && ok;
}

/** How long close waits for Redis to answer PING before treating it as gone. */
const PING_MS = 1_000;

/**
 * Close `worker`: running jobs get `graceMs`, then its connections are cut;
 * see the file comment. When Redis does not answer at all, nothing a job
 * does could be recorded, so there is no grace: `onLate` gets 1 s and the
 * connections are cut. Never throws.
 */
export async function closeWorker(worker: Worker, opts: CloseWorkerOptions): Promise<WorkerCloseOutcome> {
  const reachable = await answers(worker, PING_MS);
  const closing = worker.close();
  closing.catch(() => undefined);
  if (await within(closing, reachable ? opts.graceMs : 0)) return 'closed';
  if (opts.onLate !== undefined) await within(opts.onLate(closing, reachable ? 'deadline' : 'redis_unreachable'), reachable ? (opts.lateMs ?? 5_000) : PING_MS);
  if (await within(closing, 0)) return 'forced';
  await within(cut(worker), PING_MS);
  await within(closing, PING_MS);
  return 'forced';
}
