/**
 * `heapcap trigger --idempotency-key` as typed (bin/heapcap) against
 * `bin/heapcap serve --dev` and a real Node target: two triggers with the same
 * key make one capture (the second is the API's replay of the first), even with
 * --force, which without a key makes a new capture each time; a key the API
 * would refuse is refused before any request.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { fixturePath, runHeapcap, startDevServe, startNodeTarget, startRedis, tmpDir, type HeapcapResult, type NodeTarget, type RedisServer, type RunningHeapcap, type TmpDir } from '@heapcap/testkit';

let redis: RedisServer;
let target: NodeTarget;
let dir: TmpDir;
let serve: RunningHeapcap;

before(async () => {
  [redis, target, dir] = await Promise.all([startRedis(), startNodeTarget({ script: fixturePath('heap-holder.cjs'), env: { HEAP_MB: '2' } }), tmpDir('heapcap-trigger-key')]);
  serve = await startDevServe(dir.path, redis.url);
});
after(async () => {
  await serve?.stop();
  await target?.kill();
  await redis?.stop();
  await dir?.cleanup();
});

function heapcap(...args: string[]): Promise<HeapcapResult> {
  return runHeapcap(args, { env: { HEAPCAP_API_URL: serve.url }, cwd: dir.path });
}

interface Triggered {
  capture: { id: string; status: string };
  replayed: boolean;
}

async function trigger(...args: string[]): Promise<Triggered> {
  const res = await heapcap('trigger', 'checkout-1', '--force', '--json', ...args);
  assert.equal(res.code, 0, `${res.stdout}\n${res.stderr}`);
  return JSON.parse(res.stdout) as Triggered;
}

void test('two triggers with the same --idempotency-key make one capture', { timeout: 120_000 }, async () => {
  assert.equal((await heapcap('targets', 'add', 'checkout-1', '--inspect', `127.0.0.1:${target.port}`)).code, 0);

  const first = await trigger('--idempotency-key', 'incident-4711', '--wait', '60');
  assert.equal(first.capture.status, 'succeeded');
  assert.equal(first.replayed, false);
  const second = await trigger('--idempotency-key', 'incident-4711', '--wait', '60');
  assert.equal(second.capture.id, first.capture.id, 'the same capture');
  assert.equal(second.replayed, true);

  // Without the key, --force makes a new one: the key, not coalescing, is what joined the two above.
  const third = await trigger('--wait', '60');
  assert.notEqual(third.capture.id, first.capture.id);
  const list = JSON.parse((await heapcap('captures', 'list', '--target', 'checkout-1', '--json')).stdout) as { items: { id: string }[] };
  assert.deepEqual(list.items.map((i) => i.id).sort(), [first.capture.id, third.capture.id].sort());

  const bad = await heapcap('trigger', 'checkout-1', '--idempotency-key', 'has space');
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /^invalid_input: --idempotency-key takes 1-255 printable ASCII characters/);
});
