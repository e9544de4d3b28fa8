/** GET /v1/targets/samples/latest: the newest samples of many targets in one request (the console's targets page). */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startRedis, type RedisServer } from '@heapcap/testkit';
import { auth, startHarness, type Harness } from './harness.ts';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const sample = (t: number, used: number) => ({ t, heapUsedBytes: used, heapTotalBytes: used * 2, heapLimitBytes: 4_000_000_000, rssBytes: null });

void describe('GET /v1/targets/samples/latest', () => {
  let redis: RedisServer;
  let h: Harness;
  const now = Date.now();
  let cut = 0;

  before(async () => {
    redis = await startRedis();
    h = await startHarness({ redisUrl: redis.url });
    // a: five samples, the first before `cut` (a stream id is the time it was written); b: one; c: none.
    await h.queue.watch.addSample('a', sample(now - 120 * 60_000, 100), 1_000, 86_400_000);
    cut = Date.now() + 1;
    while (Date.now() <= cut) await new Promise((r) => setImmediate(r)); // the next millisecond, so the first sample is before `cut`
    for (const [i, ago] of [3, 2, 1, 0].entries()) await h.queue.watch.addSample('a', sample(now - ago * 60_000, 101 + i), 1_000, 86_400_000);
    await h.queue.watch.addSample('b', sample(now - 30_000, 7), 1_000, 86_400_000);
  });
  after(async () => {
    await h?.close();
    await redis?.stop();
  });

  const get = async (url: string, who: Parameters<typeof auth>[0] = 'reader') => {
    const res = await h.app.inject({ method: 'GET', url, headers: auth(who) });
    return { status: res.statusCode, body: res.json<Json>() };
  };

  void it('answers each target\'s newest samples of the last hour, oldest first, in the order asked; none for a target without samples', async () => {
    const { status, body } = await get('/v1/targets/samples/latest?ids=c,a,b,a&points=3');
    assert.equal(status, 200, JSON.stringify(body));
    assert.deepEqual(body['items'].map((i: Json) => i['targetId']), ['c', 'a', 'b'], 'one per distinct id, in the order asked');
    assert.deepEqual(body['items'][0]['samples'], []);
    assert.deepEqual(body['items'][1]['samples'].map((s: Json) => s['heapUsedBytes']), [102, 103, 104], 'the newest three, oldest first');
    assert.deepEqual(body['items'][2]['samples'], [sample(now - 30_000, 7)]);
    // Default: the latest only; `since` leaves out what was written before it.
    assert.deepEqual((await get('/v1/targets/samples/latest?ids=a')).body['items'][0]['samples'].map((s: Json) => s['heapUsedBytes']), [104]);
    assert.equal((await get('/v1/targets/samples/latest?ids=a&points=10')).body['items'][0]['samples'].length, 5);
    const since = new Date(cut).toISOString();
    assert.deepEqual((await get(`/v1/targets/samples/latest?ids=a&points=10&since=${since}`)).body['items'][0]['samples'].map((s: Json) => s['heapUsedBytes']), [101, 102, 103, 104]);
  });

  void it('reads every target with one XREVRANGE each, pipelined: 200 targets in one request', async () => {
    const ids = Array.from({ length: 200 }, (_, i) => `t${i}`);
    const start = await h.queue.redis.info('commandstats');
    const { status, body } = await get(`/v1/targets/samples/latest?ids=${ids.join(',')}`);
    assert.equal(status, 200);
    assert.equal(body['items'].length, 200);
    const calls = (info: string) => Number(/cmdstat_xrevrange:calls=(\d+)/.exec(info)?.[1] ?? 0);
    assert.equal(calls(await h.queue.redis.info('commandstats')) - calls(start), 200);
  });

  void it('refuses a bad id list at the field; needs captures:read; a target named "samples" is still GET /v1/targets/samples', async () => {
    for (const q of ['ids=', 'ids=a,,b', 'ids=-a', `ids=${Array.from({ length: 201 }, (_, i) => `t${i}`).join(',')}`, 'ids=a&points=0', 'ids=a&points=361']) {
      const { status, body } = await get(`/v1/targets/samples/latest?${q}`);
      assert.equal(status, 400, q);
      assert.equal(body['error']['code'], 'validation_failed', q);
    }
    assert.equal((await get('/v1/targets/samples/latest?ids=a', 'writer')).status, 403);
    const named = await get('/v1/targets/samples');
    assert.equal(named.status, 404);
    assert.match(JSON.stringify(named.body), /samples/);
  });
});
