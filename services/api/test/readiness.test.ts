/**
 * Redis restarted while the API is idle: /readyz answers 503 during the outage
 * and 200 after it, requests fail with 503 `unavailable` (never a hang, never
 * internals), and the capture accepted before the outage is still there.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startPersistentRedis, waitFor, type PersistentRedis } from '@heapcap/testkit';
import type { LightMyRequestResponse as LightResponse } from 'fastify';
import { auth, nodeTarget, startHarness, type Harness } from './harness.ts';

void describe('readiness across a Redis restart', () => {
  let redis: PersistentRedis;
  let h: Harness;

  before(async () => {
    redis = await startPersistentRedis();
    h = await startHarness({ redisUrl: redis.url, targets: [nodeTarget('app', 9229)] });
  });
  after(async () => {
    await h?.close();
    await redis?.destroy();
  });

  const readyz = async (): Promise<{ status: number; body: string }> => {
    const r = await h.app.inject({ method: 'GET', url: '/readyz' });
    return { status: r.statusCode, body: r.body };
  };
  const post = (): Promise<LightResponse> =>
    h.app.inject({ method: 'POST', url: '/v1/captures', headers: { ...auth('runbook'), 'content-type': 'application/json' }, payload: '{"target":"app"}' });

  void it('503 during the outage, 200 after, and the accepted capture survives', async () => {
    const accepted = await post();
    assert.equal(accepted.statusCode, 202, accepted.body);
    const id = accepted.json<{ capture: { id: string } }>().capture.id;
    assert.equal((await readyz()).status, 200);

    await redis.stop();
    const down = await waitFor(async () => {
      const r = await readyz();
      return r.status === 503 ? r : undefined;
    }, { timeoutMs: 10_000, what: '/readyz to answer 503' });
    assert.deepEqual(JSON.parse(down.body), {
      error: { code: 'unavailable', message: 'not ready: a dependency is unreachable', details: { checks: { redis: 'unavailable', registry: 'unavailable', storage: 'ok' } } },
    });
    // Liveness is the process, not its dependencies.
    assert.equal((await h.app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200);
    // A trigger during the outage fails fast with a retryable 503 and says nothing internal.
    const t0 = Date.now();
    const refused = await post();
    assert.equal(refused.statusCode, 503, refused.body);
    assert.equal(refused.json<{ error: { code: string } }>().error.code, 'unavailable');
    assert.doesNotMatch(refused.body, /ECONNREFUSED|ioredis|stack|\.ts/);
    assert.ok(Date.now() - t0 < 6_000, `answered in ${Date.now() - t0} ms`);
    const metrics = (await h.app.inject({ method: 'GET', url: '/metrics' })).body;
    assert.match(metrics, /^heapcap_redis_up 0$/m);

    await redis.start();
    await waitFor(async () => (await readyz()).status === 200, { timeoutMs: 20_000, intervalMs: 100, what: '/readyz to answer 200 again' });

    const record = await h.app.inject({ method: 'GET', url: `/v1/captures/${id}`, headers: auth('reader') });
    assert.equal(record.statusCode, 200, record.body);
    assert.equal(record.json<{ capture: { status: string } }>().capture.status, 'queued');
    assert.equal((await h.queue.depth()).jobs.waiting, 1, 'its job is still queued');
    // The target's active capture is intact: a new request joins it.
    const joined = await post();
    assert.equal(joined.statusCode, 200, joined.body);
    assert.equal(joined.json<{ capture: { id: string }; coalesced: boolean }>().capture.id, id);
  });
});

void describe('readiness and the target registry', () => {
  let redis: PersistentRedis;
  let h: Harness;

  before(async () => {
    redis = await startPersistentRedis();
    h = await startHarness({ redisUrl: redis.url, targets: [nodeTarget('app', 9229)] });
  });
  after(async () => {
    await h?.close();
    await redis?.destroy();
  });

  void it('503 with registry: unavailable while the targets file is not in the registry (Redis lost its data), 200 once synced again', async () => {
    assert.equal((await h.app.inject({ method: 'GET', url: '/readyz' })).statusCode, 200);
    // What a Redis restarted without persistence looks like to the API: no sync marker, no targets.
    await h.queue.redis.flushall();
    const down = await h.app.inject({ method: 'GET', url: '/readyz' });
    assert.equal(down.statusCode, 503, down.body);
    assert.deepEqual(down.json<{ error: { details: unknown } }>().error.details, { checks: { redis: 'ok', registry: 'unavailable', storage: 'ok' } });
    await h.queue.targets.syncFromFile([nodeTarget('app', 9229)]);
    assert.equal((await h.app.inject({ method: 'GET', url: '/readyz' })).statusCode, 200);
  });
});
