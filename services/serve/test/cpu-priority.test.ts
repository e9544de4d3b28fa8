/**
 * `heapcap serve` (bin/heapcap) lowers every thread of its process to
 * HEAPCAP_NICE once its worker starts, so that paused targets on its host get
 * the CPU first (the default, 10, is checked through `heapcap capture` in
 * packages/cli/test/cpu-priority.test.ts; the suite itself runs at 0).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startDevServe, startRedis, threadNiceValues, tmpDir } from '@heapcap/testkit';

void test('serve runs every thread at HEAPCAP_NICE, and says so in its log', { timeout: 120_000 }, async (t) => {
  const redis = await startRedis();
  t.after(() => redis.stop());
  const work = await tmpDir('heapcap-serve-nice');
  t.after(() => work.cleanup());
  const serve = await startDevServe(work.path, redis.url, { HEAPCAP_NICE: '7', HEAPCAP_LOG_LEVEL: 'info' });
  t.after(() => serve.stop());
  const nice = threadNiceValues(serve.pid);
  assert.ok(nice.length >= 4, `node has its threads (${nice.length})`);
  assert.deepEqual([...new Set(nice)], [7], `nice of every thread: ${nice.join(' ')}`);
  assert.match(serve.stdout.text() + serve.stderr.text(), /capturing at a lower CPU priority than the targets/);
});
