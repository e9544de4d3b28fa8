import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createHarness, type Harness } from './helpers/harness.ts';
import { startPersistentRedis, type PersistentRedis } from '@heapcap/testkit';

let redis: PersistentRedis;
let h: Harness | undefined;

before(async () => {
  redis = await startPersistentRedis();
});
after(async () => {
  await h?.cleanup();
  await redis?.destroy();
});

void test('Redis restarted while idle: accepted captures survive and run; clients reconnect by themselves', async () => {
  h = await createHarness(redis.url);
  for (const id of ['a', 'b', 'c']) await h.addTarget(id, 5);
  // Accepted while no worker runs: they wait in Redis.
  const accepted = [];
  for (const id of ['a', 'b', 'c']) accepted.push((await h.queue.requestCapture({ targetId: id, trigger: { kind: 'rest', who: 'oncall' } })).record.id);
  await redis.restart();
  // The same queue object (the API's) works again after the restart, without being re-created.
  await h.queue.ping(5_000).catch(async () => h!.queue.ping(5_000));
  assert.deepEqual((await h.queue.depth()).records.queued, 3);
  const w = await h.startWorker();
  const finals = await Promise.all(accepted.map((id) => h!.queue.waitForCapture(id, 120_000)));
  assert.deepEqual(finals.map((r) => r?.status), ['succeeded', 'succeeded', 'succeeded']);
  // Restart again under an idle, running worker: it reconnects and takes the next capture.
  await redis.restart();
  await h.queue.ping(5_000).catch(async () => h!.queue.ping(5_000));
  const next = await h.queue.requestCapture({ targetId: 'a', trigger: { kind: 'rest', who: 'oncall' } });
  assert.equal(next.created, true);
  const done = await h.queue.waitForCapture(next.record.id, 60_000);
  assert.equal(done?.status, 'succeeded', JSON.stringify(done?.error));
  assert.equal(w.state, 'running');
});
