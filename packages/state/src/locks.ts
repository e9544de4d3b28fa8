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

/** What a lock needs: the command connection and the Redis deadline. */
export type LockContext = Pick<QueueContext, 'redis' | 'settings'>;

/** Take the lock at `key` for `leaseMs` if it is free; true when taken. `token` must be unique to the holder. */
export async function acquireKeyLock(ctx: LockContext, key: string, token: string, leaseMs: number): Promise<boolean> {
  const reply = await withRedisDeadline(ctx.redis.set(key, token, 'PX', leaseMs, 'NX'), ctx.settings.redisTimeoutMs, 'lock acquire');
  return reply === 'OK';
}

/** Extend the lease of the lock at `key` to `leaseMs` from now; false when it is no longer ours. */
export async function extendKeyLock(ctx: LockContext, key: string, token: string, leaseMs: number): Promise<boolean> {
  const reply = await withRedisDeadline(EXTEND.run(ctx.redis, [key], [token, leaseMs]), ctx.settings.redisTimeoutMs, 'lock extend');
  return reply === 1;
}

/** Release the lock at `key` if it is still ours; false when it was not (expired, taken over). */
export async function releaseKeyLock(ctx: LockContext, key: string, token: string): Promise<boolean> {
  const reply = await withRedisDeadline(RELEASE.run(ctx.redis, [key], [token]), ctx.settings.redisTimeoutMs, 'lock release');
  return reply === 1;
}

/** Per-target locks with leases. Tokens must be unique per holder (e.g. `<captureId>:<job token>`). */
export class TargetLocks {
  readonly #ctx: QueueContext;

  constructor(ctx: QueueContext) {
    this.#ctx = ctx;
  }

  /** Take the lock of `targetId` for `leaseMs` if it is free; true when taken. */
  acquire(targetId: string, token: string, leaseMs: number): Promise<boolean> {
    return acquireKeyLock(this.#ctx, this.#ctx.keys.targetLock(targetId), token, leaseMs);
  }

  /** Extend the lease to `leaseMs` from now; false when the lock is no longer ours. */
  extend(targetId: string, token: string, leaseMs: number): Promise<boolean> {
    return extendKeyLock(this.#ctx, this.#ctx.keys.targetLock(targetId), token, leaseMs);
  }

  /** Release the lock if it is still ours; false when it was not (expired, taken over). */
  release(targetId: string, token: string): Promise<boolean> {
    return releaseKeyLock(this.#ctx, this.#ctx.keys.targetLock(targetId), token);
  }

  /** The current holder's token, or null when the target is free. */
  holder(targetId: string): Promise<string | null> {
    return withRedisDeadline(this.#ctx.redis.get(this.#ctx.keys.targetLock(targetId)), this.#ctx.settings.redisTimeoutMs, 'lock holder');
  }
}
