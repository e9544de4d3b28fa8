/** GET /v1/workers lists live workers from their heartbeats; a placed target without a worker fails with no_worker_for_target. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startRedis, waitFor, type RedisServer } from '@heapcap/testkit';
import type { CaptureRecord, WorkerInfo } from '@heapcap/state';
import { auth, nodeTarget, startHarness, type Harness } from './harness.ts';

void describe('/v1/workers', () => {
  let redis: RedisServer;
  let h: Harness;

  before(async () => {
    redis = await startRedis();
    h = await startHarness({
      redisUrl: redis.url,
      targets: [{ ...nodeTarget('far', 9), placement: 'elsewhere' }],
      worker: { concurrency: 1, heartbeatIntervalMs: 300 },
      workerPlacements: ['here', 'there'],
      workerId: 'w-1',
    });
  });
  after(async () => {
    await h?.close();
    await redis?.stop();
  });

  void it('captures:read lists the worker with placements, version and captures in flight; other scopes are refused', async () => {
    const res = await h.app.inject({ method: 'GET', url: '/v1/workers', headers: auth('reader') });
    assert.equal(res.statusCode, 200, res.body);
    const items = res.json<{ items: WorkerInfo[] }>().items;
    assert.equal(items.length, 1);
    assert.deepEqual([items[0]?.id, items[0]?.placements, items[0]?.inFlight], ['w-1', ['here', 'there'], 0]);
    assert.match(items[0]?.version ?? '', /^\d+\.\d+\.\d+/);
    assert.equal((await h.app.inject({ method: 'GET', url: '/v1/workers', headers: auth('writer') })).statusCode, 403);
    assert.equal((await h.app.inject({ method: 'GET', url: '/v1/workers' })).statusCode, 401);
    const metrics = await h.app.inject({ method: 'GET', url: '/metrics' });
    assert.match(metrics.body, /heapcap_workers\{placement="here"\} 1/);
  });

  void it('a capture of a placement nobody consumes fails at once with no_worker_for_target', async () => {
    const res = await h.app.inject({ method: 'POST', url: '/v1/captures', headers: auth('runbook'), payload: { target: 'far' } });
    assert.ok(res.statusCode < 300, res.body);
    assert.match(res.body, /no_worker_for_target/);
    const [first] = (await h.queue.listCaptures({ targetId: 'far' })).items;
    assert.equal((first as CaptureRecord | undefined)?.error?.code, 'no_worker_for_target');
    const metrics = await h.app.inject({ method: 'GET', url: '/metrics' });
    assert.match(metrics.body, /heapcap_workers\{placement="elsewhere"\} 0/);
  });

  void it('a worker that stops leaves the list once its heartbeat expires', async () => {
    await h.worker?.close(2_000);
    await waitFor(async () => {
      const res = await h.app.inject({ method: 'GET', url: '/v1/workers', headers: auth('reader') });
      return res.json<{ items: WorkerInfo[] }>().items.length === 0 || undefined;
    }, { timeoutMs: 5_000, what: 'the worker to leave /v1/workers' });
  });
});
