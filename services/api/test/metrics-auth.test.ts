/** /metrics names every target in its heapcap_target_* series: public by default, a token's with HEAPCAP_METRICS_AUTH=token. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { parseConfig } from '@heapcap/config';
import { startRedis, type RedisServer } from '@heapcap/testkit';
import { auth, startHarness, type Harness } from './harness.ts';

const SERIES = /^heapcap_target_heap_used_bytes\{target="secret-billing"\} 123456$/m;

void describe('GET /metrics and HEAPCAP_METRICS_AUTH', () => {
  let redis: RedisServer;
  const harnesses: Harness[] = [];

  before(async () => {
    redis = await startRedis();
  });
  after(async () => {
    for (const h of harnesses) await h.close();
    await redis?.stop();
  });

  async function harness(env: Record<string, string>): Promise<Harness> {
    const h = await startHarness({ redisUrl: redis.url, env, targets: [{ id: 'secret-billing', kind: 'node', inspect: '127.0.0.1:9', labels: {} }] });
    harnesses.push(h);
    await h.queue.watch.addSample('secret-billing', { t: Date.now(), heapUsedBytes: 123456, heapTotalBytes: 200000, heapLimitBytes: null, rssBytes: null }, 10, 3_600_000);
    return h;
  }

  void it('default (none): anyone who reaches /metrics reads the per-target series', async () => {
    const h = await harness({});
    const res = await h.app.inject({ method: 'GET', url: '/metrics' });
    assert.equal(res.statusCode, 200);
    assert.match(res.body, SERIES);
  });

  void it('token: 401 without a token, 403 without captures:read, the series with it', async () => {
    const h = await harness({ HEAPCAP_METRICS_AUTH: 'token' });
    const anonymous = await h.app.inject({ method: 'GET', url: '/metrics' });
    assert.equal(anonymous.statusCode, 401);
    assert.doesNotMatch(anonymous.body, /secret-billing/);
    const writer = await h.app.inject({ method: 'GET', url: '/metrics', headers: auth('writer') });
    assert.equal(writer.statusCode, 403);
    const reader = await h.app.inject({ method: 'GET', url: '/metrics', headers: auth('reader') });
    assert.equal(reader.statusCode, 200);
    assert.match(reader.body, SERIES);
    // The probes stay public.
    assert.equal((await h.app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200);
  });

  void it('refuses any other value at start', () => {
    assert.throws(() => parseConfig({ HEAPCAP_REDIS_URL: redis.url, HEAPCAP_METRICS_AUTH: 'basic' }), /HEAPCAP_METRICS_AUTH/);
  });
});
