/**
 * Memory curves for every registered target (issue 24): with
 * HEAPCAP_SAMPLE_INTERVAL set, `bin/heapcap serve` samples targets no watch
 * rule watches, so the console's curve and the heapcap_target_* gauges exist
 * for them; with `0`, only a rule's targets are sampled.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fixturePath, startDevServe, startNodeTarget, startRedis, tmpDir, waitFor, type NodeTarget, type RedisServer, type TmpDir } from '@heapcap/testkit';

let dir: TmpDir;
let redis: RedisServer;
let spare: RedisServer;
let a: NodeTarget;
let b: NodeTarget;

before(async () => {
  [dir, redis, spare, a, b] = await Promise.all([
    tmpDir('heapcap-sample-all'),
    startRedis(),
    startRedis(),
    startNodeTarget({ script: fixturePath('heap-holder.cjs'), env: { HEAP_MB: '4' } }),
    startNodeTarget({ script: fixturePath('heap-holder.cjs'), env: { HEAP_MB: '4' } }),
  ]);
});
after(async () => {
  await Promise.all([a?.kill('SIGKILL'), b?.kill('SIGKILL')]);
  await Promise.all([redis?.stop(), spare?.stop()]);
  await dir?.cleanup();
});

async function workDir(name: string): Promise<string> {
  const work = join(dir.path, name);
  await import('node:fs/promises').then((fs) => fs.mkdir(work));
  await writeFile(join(work, 'targets.yaml'), `targets:\n  - { id: a, kind: node, inspect: "127.0.0.1:${a.port}" }\n  - { id: b, kind: node, inspect: "127.0.0.1:${b.port}" }\n`);
  return work;
}

async function samples(url: string, id: string): Promise<number> {
  const res = await fetch(`${url}/v1/targets/${id}/samples`);
  assert.equal(res.status, 200, await res.clone().text());
  return ((await res.json()) as { items: unknown[] }).items.length;
}

void test('HEAPCAP_SAMPLE_INTERVAL: every registered target has a memory curve and a gauge, with no watch rule', { timeout: 120_000 }, async () => {
  const serve = await startDevServe(await workDir('all'), redis.url, { HEAPCAP_SAMPLE_INTERVAL: '1s' });
  try {
    await waitFor(async () => (await samples(serve.url, 'a')) >= 2 && (await samples(serve.url, 'b')) >= 2, { timeoutMs: 60_000, intervalMs: 250, what: 'two samples of each target' });
    const metrics = await (await fetch(`${serve.url}/metrics`)).text();
    assert.match(metrics, /^heapcap_target_heap_used_bytes\{target="a"\} \d+/m);
    assert.match(metrics, /^heapcap_target_heap_used_bytes\{target="b"\} \d+/m);
  } finally {
    await serve.stop('SIGTERM');
  }
});

void test('HEAPCAP_SAMPLE_INTERVAL=0: only the targets a watch rule watches are sampled', { timeout: 120_000 }, async () => {
  const serve = await startDevServe(await workDir('off'), spare.url, { HEAPCAP_SAMPLE_INTERVAL: '0', HEAPCAP_WATCH_INTERVAL: '1s' });
  try {
    const rule = await fetch(`${serve.url}/v1/watch-rules`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ id: 'only-a', target: 'a', when: { metric: 'heapUsedBytes', above: 64 * 1024 ** 3, forSeconds: 1 }, cooldownSeconds: 3600, maxPerDay: 1 }),
    });
    assert.equal(rule.status, 201, await rule.text());
    // Once the watched target has three samples, the other had as many chances to be sampled.
    await waitFor(async () => (await samples(serve.url, 'a')) >= 3, { timeoutMs: 60_000, intervalMs: 250, what: 'three samples of the watched target' });
    assert.equal(await samples(serve.url, 'b'), 0, 'the unwatched target is not sampled');
  } finally {
    await serve.stop('SIGTERM');
  }
});

void test('new targets get their first sample within seconds, not at an offset of up to one interval (HEAPCAP_SAMPLE_INTERVAL=10m)', { timeout: 120_000 }, async () => {
  // A Redis without samples: both targets are new. Spread over the whole 10 minutes (as before), the first
  // samples of two targets would both land within the 30 s below about once in 400 starts.
  assert.equal(await redis.cli('FLUSHALL'), 'OK');
  const serve = await startDevServe(await workDir('new'), redis.url, { HEAPCAP_SAMPLE_INTERVAL: '10m' });
  try {
    await waitFor(async () => (await samples(serve.url, 'a')) >= 1 && (await samples(serve.url, 'b')) >= 1, { timeoutMs: 30_000, intervalMs: 250, what: 'a first sample of each new target' });
  } finally {
    await serve.stop('SIGTERM');
  }
});
