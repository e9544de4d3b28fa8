import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { startRedis, tmpDir, type RedisServer, type TmpDir } from '@heapcap/testkit';
import { isQueueError, loadTargetsFile, type HeapcapQueue } from '../src/index.ts';
import { freshQueue, nodeTarget } from './helpers.ts';

let redis: RedisServer;
let dir: TmpDir;
const queues: HeapcapQueue[] = [];

before(async () => {
  redis = await startRedis();
  dir = await tmpDir('heapcap-registry');
});
after(async () => {
  await Promise.allSettled(queues.map((q) => q.close()));
  await redis?.stop();
  await dir?.cleanup();
});

const YAML = `targets:
  - id: checkout-api
    kind: node
    inspect: 127.0.0.1:9229
    labels: { service: checkout, env: prod }
  - id: storefront
    kind: chromium
    browser: 127.0.0.1:9222
    select: { urlPattern: "shop\\\\.example" }
`;

void test('the targets file (YAML and JSON) loads, syncs, and keeps API-added targets', async () => {
  const q = freshQueue(redis.url);
  queues.push(q);
  const yamlPath = join(dir.path, 'targets.yaml');
  await writeFile(yamlPath, YAML);
  const targets = await loadTargetsFile(yamlPath);
  assert.deepEqual(targets.map((t) => t.id), ['checkout-api', 'storefront']);
  assert.deepEqual(targets[1]?.kind === 'chromium' ? targets[1].select : null, { urlPattern: 'shop\\.example' });
  await q.targets.put(nodeTarget('from-api'));
  assert.deepEqual(await q.targets.syncFromFile(targets), { added: 2, removed: 0 });
  assert.deepEqual((await q.targets.list()).map((e) => `${e.target.id}:${e.source}`), ['checkout-api:file', 'from-api:api', 'storefront:file']);
  // The file changes: storefront is gone from it, so from the registry; the API entry stays.
  const jsonPath = join(dir.path, 'targets.json');
  await writeFile(jsonPath, JSON.stringify({ targets: [targets[0]] }));
  assert.deepEqual(await q.targets.syncFromFile(await loadTargetsFile(jsonPath)), { added: 1, removed: 1 });
  assert.deepEqual((await q.targets.list()).map((e) => e.target.id), ['checkout-api', 'from-api']);
  assert.equal(await q.targets.remove('from-api'), true);
  assert.equal(await q.targets.remove('from-api'), false);
  assert.equal(await q.targets.get('from-api'), null);
});

void test('bad targets files and bodies are refused with the field that is wrong', async () => {
  const q = freshQueue(redis.url);
  queues.push(q);
  const bad = join(dir.path, 'bad.yaml');
  await writeFile(bad, 'targets:\n  - id: x\n    kind: node\n');
  await assert.rejects(loadTargetsFile(bad), (err) => isQueueError(err, 'invalid_input') && /exactly one of inspect/.test(err.message));
  await writeFile(bad, 'targets:\n  - { id: x, kind: node, inspect: "h:1" }\n  - { id: x, kind: node, inspect: "h:2" }\n');
  await assert.rejects(loadTargetsFile(bad), (err) => isQueueError(err, 'invalid_input') && /appears twice/.test(err.message));
  await writeFile(bad, 'targets: [ {');
  await assert.rejects(loadTargetsFile(bad), (err) => isQueueError(err, 'invalid_input'));
  await assert.rejects(loadTargetsFile(join(dir.path, 'missing.yaml')), (err) => isQueueError(err, 'targets_file_unreadable'));
  assert.deepEqual(await loadTargetsFile(join(dir.path, 'missing.yaml'), { missingOk: true }), []);
  await assert.rejects(q.targets.put({ id: 'y', kind: 'node', inspect: 'h:1', url: 'ws://evil' }), (err) => isQueueError(err, 'invalid_input'));
  const { created } = await q.targets.put({ id: 'y', kind: 'node', inspect: 'h:1' });
  assert.equal(created, true);
  assert.equal((await q.targets.put({ id: 'y', kind: 'node', inspect: 'h:2' })).created, false);
  assert.deepEqual((await q.targets.get('y'))?.target, { id: 'y', kind: 'node', inspect: 'h:2', labels: {} });
});

void test('audit log: append returns the entry; the stream is capped', async () => {
  const q = freshQueue(redis.url, { auditMaxLen: 10 });
  queues.push(q);
  const e = await q.audit.append({ action: 'capture.trigger', who: 'oncall', from: '10.0.0.1', targetId: 't', captureId: 'c', details: { status: 202 } });
  assert.match(e.id, /^\d+-\d+$/);
  const [back] = await q.audit.recent(1);
  assert.deepEqual(back, e);
  for (let i = 0; i < 500; i++) await q.audit.append({ action: 'artifact.download', who: `u${i}` });
  const len = await q.redis.xlen(q.keys.audit());
  // MAXLEN ~ trims whole radix-tree nodes (100 entries by default), so "about 10" is at most ~110.
  assert.ok(len <= 110, `stream length ${len}`);
  assert.equal((await q.audit.recent(1))[0]?.who, 'u499');
});

void test('ping fails fast with redis_unavailable when Redis is down', async () => {
  const q = freshQueue('redis://127.0.0.1:1');
  queues.push(q);
  const t0 = Date.now();
  await assert.rejects(q.ping(500), (err) => isQueueError(err, 'redis_unavailable'));
  assert.ok(Date.now() - t0 < 1_500);
});
