/**
 * Readiness: Redis answers PING, the target registry holds the targets file
 * (it is gone after Redis lost its data, until a service re-syncs it), and
 * the artifact store accepts a probe write.
 * The storage probe writes and deletes an object, so a successful result is
 * reused for a few seconds: readiness probes every second must not turn into
 * a write load on the store. A failure is never cached.
 */
import fp from 'fastify-plugin';
import type { FastifyPluginAsync } from 'fastify';
import type { RedisClient } from '@heapcap/state';
import type { ArtifactStore } from '@heapcap/storage';
import type { RedisDataLoss } from '@heapcap/state';

/** The state of one dependency. */
export type CheckState = 'ok' | 'unavailable';

/** What `/readyz` reports. */
export interface Readiness {
  ready: boolean;
  checks: { redis: CheckState; registry: CheckState; storage: CheckState };
  /** Why storage is unavailable (`code: message` of the store's check, e.g. a path and its errno); only when it is. */
  reasons?: { storage: string };
  /** The last time heapcap found Redis had lost its data, what went and what heapcap re-created. */
  redisDataLoss?: RedisDataLoss;
}

/** Checks the API's dependencies. */
export interface ReadinessService {
  check(): Promise<Readiness>;
}

export interface ReadinessOptions {
  redis: RedisClient;
  sink: ArtifactStore;
  /** True while the registry holds the targets file's entries. */
  registrySynced: () => Promise<boolean>;
  /** The last Redis data loss recorded (null: none). */
  lastDataLoss?: () => Promise<RedisDataLoss | null>;
  /** Deadline of each check; default 2 s. */
  timeoutMs?: number;
  /** How long a successful storage check is reused; default 10 s. */
  storageTtlMs?: number;
}

/**
 * `ok` when `p` resolves within `ms`, `unavailable` when it rejects or is late. The deadline resolves from setImmediate,
 * after the loop turn has read the sockets: a stalled serve whose Redis answered is not reported not ready.
 */
async function within(p: Promise<unknown>, ms: number): Promise<CheckState> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<CheckState>((resolve) => {
    timer = setTimeout(() => setImmediate(() => resolve('unavailable')), ms);
  });
  try {
    return await Promise.race([p.then(() => 'ok' as const, () => 'unavailable' as const), deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/** `code: message` of a failed storage check, short (a path and an errno are operational facts, not secrets). */
function describeFailure(err: unknown): string {
  const code = (err as { code?: unknown }).code;
  const text = `${typeof code === 'string' ? `${code}: ` : ''}${err instanceof Error ? err.message : String(err)}`;
  return text.length > 300 ? `${text.slice(0, 299)}…` : text;
}

/** A ReadinessService over `redis`, the registry and `sink`. */
export function createReadiness(opts: ReadinessOptions): ReadinessService {
  const timeoutMs = opts.timeoutMs ?? 2_000;
  const ttlMs = opts.storageTtlMs ?? 10_000;
  let storageOkUntil = 0;
  return {
    async check() {
      // ioredis queues commands while reconnecting; a client known to be
      // disconnected is reported at once instead of waiting out its retries.
      const down = opts.redis.status === 'reconnecting' || opts.redis.status === 'end' || opts.redis.status === 'close';
      const redisCheck = down ? Promise.resolve<CheckState>('unavailable') : within(opts.redis.ping(), timeoutMs);
      const registryCheck = down
        ? Promise.resolve<CheckState>('unavailable')
        : within(
            opts.registrySynced().then((ok) => {
              if (!ok) throw new Error('registry not synced');
            }),
            timeoutMs,
          );
      let storageReason = `no answer within ${timeoutMs} ms`;
      const storageCheck =
        Date.now() < storageOkUntil
          ? Promise.resolve<CheckState>('ok')
          : within(
              (async () => {
                const ac = new AbortController();
                const timer = setTimeout(() => ac.abort(), timeoutMs);
                try {
                  await opts.sink.check(ac.signal);
                } catch (err) {
                  storageReason = describeFailure(err);
                  throw err;
                } finally {
                  clearTimeout(timer);
                }
              })(),
              timeoutMs,
            );
      const lossCheck = down || opts.lastDataLoss === undefined ? Promise.resolve(null) : opts.lastDataLoss().catch(() => null);
      const [redis, registry, storage, loss] = await Promise.all([redisCheck, registryCheck, storageCheck, lossCheck]);
      if (storage === 'ok' && Date.now() >= storageOkUntil) storageOkUntil = Date.now() + ttlMs;
      return {
        ready: redis === 'ok' && registry === 'ok' && storage === 'ok',
        checks: { redis, registry, storage },
        ...(storage === 'ok' ? {} : { reasons: { storage: storageReason } }),
        ...(loss === null ? {} : { redisDataLoss: loss }),
      };
    },
  };
}

declare module 'fastify' {
  interface FastifyInstance {
    readiness: ReadinessService;
  }
}

const readinessPlugin: FastifyPluginAsync<ReadinessOptions> = async (app, opts) => {
  app.decorate('readiness', createReadiness(opts));
};

export default fp(readinessPlugin, { name: 'heapcap-readiness' });
