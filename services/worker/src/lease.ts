/**
 * While a capture runs: renew the target lock's lease, and look for a cancel
 * flag (in case the pub/sub message was missed during a reconnect). Losing the
 * lock aborts the capture: another worker may now own the target. Unless the
 * lock went with Redis's data (`recover` says so and takes it again): then the
 * capture goes on. A reconnect renews at once, so a Redis that came back empty
 * is found before anyone else can take the target.
 */
import type { Logger } from 'pino';
import type { HeapcapQueue } from '@heapcap/state';

export interface LeaseHandle {
  /** Stop renewing (idempotent). */
  stop(): void;
}

export interface LeaseOptions {
  queue: HeapcapQueue;
  targetId: string;
  captureId: string;
  token: string;
  leaseMs: number;
  log: Logger;
  onLost: () => void;
  onCancelFlag: () => void;
  /**
   * The lock was not ours any more: 'recovered' when it went with Redis's data
   * and was taken again (with the capture's record written again), so the
   * capture goes on; 'finishing' when the attempt is already writing its
   * outcome (which then writes the record itself); 'lost' when another holder
   * may have it.
   */
  recover?: () => Promise<'recovered' | 'finishing' | 'lost'>;
}

/** Start the renew/poll timer; ticks every third of the lease. */
export function startLease(o: LeaseOptions): LeaseHandle {
  let stopped = false;
  let busy = false;
  let failures = 0;
  const tick = async (): Promise<void> => {
    if (busy || stopped) return;
    busy = true;
    try {
      const ours = await o.queue.locks.extend(o.targetId, o.token, o.leaseMs);
      failures = 0;
      if (!ours && !stopped) {
        const recovered = o.recover === undefined ? 'lost' : await o.recover();
        if (recovered === 'recovered') o.log.warn({ code: 'redis_data_lost' }, "the target lock and the capture record went with Redis's data: took the lock again and wrote the record again as running; the capture goes on");
        if (recovered !== 'lost') return;
        o.log.error('lost the target lock (lease expired); aborting the capture');
        o.onLost();
        return;
      }
      if (await o.queue.attempts.cancelRequested(o.captureId)) o.onCancelFlag();
    } catch (err) {
      // Redis hiccup: the lease still has up to two thirds left; the next tick retries.
      failures++;
      o.log.warn({ err, failures }, 'could not renew the target lock');
    } finally {
      busy = false;
    }
  };
  const timer = setInterval(() => void tick(), Math.max(50, Math.floor(o.leaseMs / 3)));
  const onReady = (): void => void tick();
  o.queue.redis.on('ready', onReady);
  return {
    stop: () => {
      stopped = true;
      clearInterval(timer);
      o.queue.redis.off('ready', onReady);
    },
  };
}
