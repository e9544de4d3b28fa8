/**
 * withRedisDeadline counts Redis's silence, not this process's own stalls: an
 * answer that arrived while the event loop was blocked past the deadline is
 * taken, not reported as "Redis did not answer" (a 503 `unavailable` from the
 * API). After a stall Node runs due timers before it reads sockets, so a plain
 * timer would win that race.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startRedis, type RedisServer } from '@heapcap/testkit';
import { closeRedis, createRedis, withRedisDeadline, type RedisClient } from '../src/connection.ts';
import { isQueueError } from '../src/index.ts';

let server: RedisServer;
let redis: RedisClient;

before(async () => {
  server = await startRedis();
  redis = createRedis(server.url, 'command', 'deadline-test');
  await redis.ping();
});
after(async () => {
  await closeRedis(redis);
  await server?.stop();
});

/** Keeps this thread busy for `ms` (no I/O, no timers run meanwhile). */
function stall(ms: number): void {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    // busy
  }
}

void test('an answer that came while this process stalled past the deadline is taken', async () => {
  for (let i = 0; i < 5; i++) {
    const answer = withRedisDeadline(redis.ping(), 100, 'PING');
    // Redis answers within a millisecond or so; the reply waits in the socket while this thread is busy.
    stall(400);
    assert.equal(await answer, 'PONG');
  }
});

void test('a Redis that does not answer still fails at the deadline, as redis_unavailable', async () => {
  const silent = new Promise<string>(() => {});
  const t0 = Date.now();
  await assert.rejects(withRedisDeadline(silent, 150, 'PING'), (err: unknown) => isQueueError(err) && err.code === 'redis_unavailable' && /did not answer PING within 150 ms/.test(err.message));
  assert.ok(Date.now() - t0 >= 140, `failed after ${Date.now() - t0} ms`);
});
