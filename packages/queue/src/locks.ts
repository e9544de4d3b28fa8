/**
 * The per-target lock: one snapshot in flight per target, across every worker.
 * SET NX PX takes it with a lease; the holder extends the lease while it works
 * and deletes it when done, both only if the stored token is still its own
 * (compare-and-set in Lua), so a holder whose lease ran out cannot release or
 * extend the lock a newer holder took. A holder that dies loses the lock when
 * the lease expires.
 */
import type { QueueContext } from './context.ts';
import { withRedisDeadline } from './connection.ts';
import { LuaScript } from './script.ts';

const EXTEND = new LuaScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
`);

const RELEASE = new LuaScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`);

/** Per-target locks with leases. Tokens must be unique per holder (e.g. `<captureId>:<job token>`). */
export class TargetLocks {
  readonly #ctx: QueueContext;

  constructor(ctx: QueueContext) {
    this.#ctx = ctx;
  }

  /** Take the lock of `targetId` for `leaseMs` if it is free; true when taken. */
  async acquire(targetId: string, token: string, leaseMs: number): Promise<boolean> {
    const reply = await withRedisDeadline(
      this.#ctx.redis.set(this.#ctx.keys.targetLock(targetId), token, 'PX', leaseMs, 'NX'),
      this.#ctx.settings.redisTimeoutMs,
      'lock acquire',
    );
    return reply === 'OK';
  }

  /** Extend the lease to `leaseMs` from now; false when the lock is no longer ours. */
  async extend(targetId: string, token: string, leaseMs: number): Promise<boolean> {
    const reply = await withRedisDeadline(
      EXTEND.run(this.#ctx.redis, [this.#ctx.keys.targetLock(targetId)], [token, leaseMs]),
      this.#ctx.settings.redisTimeoutMs,
      'lock extend',
    );
    return reply === 1;
  }

  /** Release the lock if it is still ours; false when it was not (expired, taken over). */
  async release(targetId: string, token: string): Promise<boolean> {
    const reply = await withRedisDeadline(
      RELEASE.run(this.#ctx.redis, [this.#ctx.keys.targetLock(targetId)], [token]),
      this.#ctx.settings.redisTimeoutMs,
      'lock release',
    );
    return reply === 1;
  }

  /** The current holder's token, or null when the target is free. */
  holder(targetId: string): Promise<string | null> {
    return withRedisDeadline(this.#ctx.redis.get(this.#ctx.keys.targetLock(targetId)), this.#ctx.settings.redisTimeoutMs, 'lock holder');
  }
}
