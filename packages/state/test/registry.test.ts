import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { parse as parseYaml } from 'yaml';
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
  await assert.rejects(loadTargetsFile(bad), (err) => isQueueError(err, 'invalid_input') && err.details?.['line'] === 1 && err.message.startsWith(`${bad}:1:`));
  await assert.rejects(loadTargetsFile(join(dir.path, 'missing.yaml')), (err) => isQueueError(err, 'targets_file_unreadable'));
  assert.deepEqual(await loadTargetsFile(join(dir.path, 'missing.yaml'), { missingOk: true }), []);
  await assert.rejects(q.targets.put({ id: 'y', kind: 'node', inspect: 'h:1', url: 'ws://evil' }), (err) => isQueueError(err, 'invalid_input'));
  const { created } = await q.targets.put({ id: 'y', kind: 'node', inspect: 'h:1' });
  assert.equal(created, true);
  assert.equal((await q.targets.put({ id: 'y', kind: 'node', inspect: 'h:2' })).created, false);
  assert.deepEqual((await q.targets.get('y'))?.target, { id: 'y', kind: 'node', inspect: 'h:2', labels: {} });
});

void test('impossible ports, hosts, patterns and lone surrogates are refused by the file loader and by put, naming the field', async () => {
  const q = freshQueue(redis.url);
  queues.push(q);
  const bad = join(dir.path, 'impossible.yaml');
  const cases: [string, string][] = [
    ['{ id: a, kind: node, inspect: "127.0.0.1:0" }', 'targets.0.inspect'],
    ['{ id: a, kind: node, inspect: "127.0.0.1:99999" }', 'targets.0.inspect'],
    ['{ id: a, kind: node, ws: "ws://127.0.0.1:0/x" }', 'targets.0.ws'],
    ['{ id: a, kind: node, ws: "ws://127.0.0.1:99999/x" }', 'targets.0.ws'],
    ['{ id: a, kind: node, ws: "https://127.0.0.1:9229/x" }', 'targets.0.ws'],
    ['{ id: a, kind: chromium, browser: "127.0.0.1:0" }', 'targets.0.browser'],
    ['{ id: a, kind: chromium, browser: "127.0.0.1:65536" }', 'targets.0.browser'],
    ['{ id: a, kind: chromium, browser: "bad host:9222" }', 'targets.0.browser'],
    ['{ id: a, kind: chromium, browser: "127.0.0.1:9222", select: { urlPattern: "(" } }', 'targets.0.select.urlPattern'],
    ['{ id: a, kind: node-pid, pid: 1, port: 0 }', 'targets.0.port'],
    ['{ id: a, kind: node, inspect: "h:1", labels: { env: "\\ud800" } }', 'targets.0.labels.env'],
  ];
  for (const [entry, field] of cases) {
    await writeFile(bad, `targets:\n  - ${entry}\n`);
    await assert.rejects(
      loadTargetsFile(bad),
      (err) => isQueueError(err, 'invalid_input') && (err.details?.['issues'] as { path: string }[]).some((i) => i.path === field),
      `${entry} → ${field}`,
    );
    const target = (parseYaml(`targets:\n  - ${entry}\n`) as { targets: unknown[] }).targets[0];
    await assert.rejects(
      q.targets.put(target),
      (err) => isQueueError(err, 'invalid_input') && (err.details?.['issues'] as { path: string }[]).some((i) => `targets.0.${i.path}` === field),
      `put ${entry}`,
    );
  }
  // The edges that are fine.
  await writeFile(bad, 'targets:\n  - { id: a, kind: node, inspect: "[::1]:65535" }\n  - { id: b, kind: node, ws: "wss://u:p@inspector.internal:1/0f1e?x=1" }\n  - { id: c, kind: chromium, browser: "localhost:1" }\n');
  assert.deepEqual((await loadTargetsFile(bad)).map((t) => t.id), ['a', 'b', 'c']);
});

void test('a stored entry that no longer validates: left out of the list, named by get, removed by a file sync', async () => {
  const q = freshQueue(redis.url);
  queues.push(q);
  await q.targets.put(nodeTarget('good'));
  // Written before port 0 was refused.
  const legacy = { target: { id: 'legacy', kind: 'node', inspect: '127.0.0.1:0', labels: {} }, source: 'file', updatedAt: new Date().toISOString() };
  await q.redis.hset(q.keys.targets(), 'legacy', JSON.stringify(legacy));
  assert.deepEqual((await q.targets.list()).map((e) => e.target.id), ['good']);
  await assert.rejects(q.targets.get('legacy'), (err) => isQueueError(err, 'invalid_input') && /"legacy".*inspect/.test(err.message));
  assert.equal(await q.targets.has('legacy'), true);
  assert.deepEqual(await q.targets.syncFromFile([]), { added: 0, removed: 1 });
  assert.equal(await q.targets.has('legacy'), false);
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
