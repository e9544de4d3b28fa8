import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { freePort, jsonLogSink, startRedis, tmpDir, waitFor, type RedisServer } from '@heapcap/testkit';
import { createQueue } from '@heapcap/state';
import { createFileSink } from '@heapcap/storage';
import { randomBytes } from 'node:crypto';
import { createLogger } from '@heapcap/service';
import { CaptureWorker } from '../src/index.ts';
import { FAST_TUNING } from './helpers/harness.ts';

let redis: RedisServer;
before(async () => {
  redis = await startRedis();
});
after(async () => {
  await redis?.stop();
});


void test('secrets are redacted: tokens, credentials, inspector WebSocket URLs, the Redis URL', () => {
  const out = jsonLogSink();
  const log = createLogger('info', { service: 'worker', destination: out.stream });
  log.info({ token: 't0ken', target: { id: 'x', ws: 'ws://127.0.0.1:9229/3f1c-uuid' }, s3: { secretAccessKey: 'AKIAsecret' }, endpoint: { wsUrl: 'ws://h/uuid' }, redisUrl: 'redis://:pw@h:6379' }, 'x');
  const [line] = out.lines();
  const text = JSON.stringify(line);
  for (const secret of ['t0ken', '3f1c-uuid', 'AKIAsecret', 'ws://h/uuid', ':pw@']) assert.ok(!text.includes(secret), `${secret} leaked: ${text}`);
  assert.equal((line?.['target'] as Record<string, unknown>)['id'], 'x');
});

void test('one child logger per capture: every line of a capture carries its ids and attempt', async () => {
  const out = jsonLogSink();
  const log = createLogger('debug', { service: 'worker', destination: out.stream });
  const prefix = `l${randomBytes(4).toString('hex')}`;
  const queue = createQueue({ redisUrl: redis.url, prefix, attempts: 2, backoffMs: 100 });
  const store = await tmpDir('heapcap-log');
  const worker = new CaptureWorker({ queue, sink: createFileSink({ dir: store.path }), log, tuning: { concurrency: 1, ...FAST_TUNING } });
  try {
    await queue.targets.put({ id: 'nowhere', kind: 'node', inspect: `127.0.0.1:${await freePort()}` });
    await worker.start();
    const { record } = await queue.requestCapture({ targetId: 'nowhere', trigger: { kind: 'rest', who: 'oncall' } });
    const final = await queue.waitForCapture(record.id, 30_000);
    assert.equal(final?.status, 'failed');
    // The record turns terminal before the worker logs the attempt that ended it: wait for that line.
    const failedOf = (lines: Record<string, unknown>[]): Record<string, unknown>[] => lines.filter((l) => typeof l['msg'] === 'string' && (l['msg'] as string).startsWith('capture failed'));
    await waitFor(() => failedOf(out.lines().filter((l) => l['captureId'] === record.id)).length >= 2, { timeoutMs: 10_000, intervalMs: 20, what: 'the second attempt\'s failure line' });
    const mine = out.lines().filter((l) => l['captureId'] === record.id);
    const failedLines = failedOf(mine);
    assert.equal(failedLines.length, 2, 'one line per attempt');
    assert.deepEqual(failedLines.map((l) => [l['targetId'], l['attempt'], l['code']]), [['nowhere', 1, 'target_unreachable'], ['nowhere', 2, 'target_unreachable']]);
    assert.ok(mine.some((l) => l['msg'] === 'capture started'));
  } finally {
    await worker.close(2_000);
    await queue.close();
    await store.cleanup();
  }
});
