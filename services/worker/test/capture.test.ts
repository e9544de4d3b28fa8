import assert from 'node:assert/strict';
import { createReadStream } from 'node:fs';
import { join } from 'node:path';
import { after, afterEach, before, test } from 'node:test';
import { createGunzip } from 'node:zlib';
import { CaptureError } from '@heapcap/errors';
import type { ArtifactStore } from '@heapcap/storage';
import { startRedis, waitFor, type RedisServer } from '@heapcap/testkit';
import { createHarness, type Harness } from './helpers/harness.ts';

let redis: RedisServer;
let h: Harness | undefined;

before(async () => {
  redis = await startRedis();
});
afterEach(async () => {
  await h?.cleanup();
  h = undefined;
});
after(async () => {
  await redis?.stop();
});

async function readGz(path: string): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of createReadStream(path).pipe(createGunzip())) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

void test('a requested capture runs: record succeeded with phase timings, artifact parses', async () => {
  h = await createHarness(redis.url);
  await h.addTarget('app', 5);
  const phases: string[] = [];
  await h.startWorker();
  const { record } = await h.queue.requestCapture({ targetId: 'app', trigger: { kind: 'rest', who: 'oncall', reason: 'test' } });
  // Watch the record's phase while it runs (it moves through the engine's phases).
  const watcher = (async () => {
    for (let i = 0; i < 600; i++) {
      const r = await h!.queue.getCapture(record.id);
      if (r?.phase && phases.at(-1) !== r.phase) phases.push(r.phase);
      if (r && r.status !== 'queued' && r.status !== 'running') return;
      await new Promise((res) => setTimeout(res, 20));
    }
  })();
  const final = await h.queue.waitForCapture(record.id, 60_000);
  await watcher;
  assert.equal(final?.status, 'succeeded', JSON.stringify(final?.error));
  assert.equal(final?.attempts, 1);
  assert.equal(final?.phase, null);
  assert.ok(phases.length >= 1, `saw phases ${phases.join(',')}`);
  for (const k of ['queued', 'connect', 'preflight', 'warm', 'gc', 'generate', 'serialize', 'sink', 'total']) {
    assert.equal(typeof final?.timings?.[k], 'number', `timing ${k}`);
  }
  const artifact = final?.artifact;
  assert.ok(artifact);
  assert.match(artifact.key, new RegExp(`^app/\\d{4}/\\d{2}/\\d{2}/${record.id}\\.heapsnapshot\\.gz$`));
  const snapshot = JSON.parse(await readGz(join(h.storeDir.path, artifact.key))) as { snapshot: { node_count: number } };
  assert.ok(snapshot.snapshot.node_count > 10_000);
  assert.ok(artifact.summaryKey !== undefined, artifact.summaryError);
  assert.deepEqual(await h.storedFiles(), [artifact.key, artifact.manifestKey, artifact.summaryKey].sort());
});

void test('the record says sink while the store finishes the upload, then summary while the summary and manifest are written', async () => {
  h = await createHarness(redis.url);
  await h.addTarget('app', 5);
  // The world's file store, each of the two steps held until the test saw its phase: a slow store, not a fake one.
  const store = h.store;
  const gate = (): { open(): void; opened: Promise<void> } => {
    let open = (): void => undefined;
    const opened = new Promise<void>((resolve) => (open = resolve));
    return { open, opened };
  };
  const uploaded = gate();
  const summarized = gate();
  const slow = new Proxy(store, {
    get(t, name): unknown {
      if (name === 'put') {
        return async (...args: Parameters<ArtifactStore['put']>) => {
          const out = await t.put(...args);
          await uploaded.opened;
          return out;
        };
      }
      if (name === 'putDocument') {
        return async (...args: Parameters<ArtifactStore['putDocument']>) => {
          if (args[1] === 'summary') await summarized.opened;
          return t.putDocument(...args);
        };
      }
      const v: unknown = Reflect.get(t, name);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(t) : v;
    },
  });
  await h.startWorker({}, { sink: slow });
  const { record } = await h.queue.requestCapture({ targetId: 'app', trigger: { kind: 'rest', who: 'oncall', reason: 'test' } });
  const phase = async (): Promise<string | null | undefined> => (await h!.queue.getCapture(record.id))?.phase;
  try {
    await waitFor(async () => (await phase()) === 'sink', { timeoutMs: 60_000, intervalMs: 20, what: 'the record in sink' });
    uploaded.open();
    await waitFor(async () => (await phase()) === 'summary', { timeoutMs: 30_000, intervalMs: 20, what: 'the record in summary' });
    assert.deepEqual(await h.storedFiles().then((f) => f.filter((k) => k.endsWith('.json'))), [], 'no summary or manifest before the summary phase ends');
  } finally {
    // A failed wait must not leave the worker's capture held: cleanup would wait for it.
    uploaded.open();
    summarized.open();
  }
  const final = await h.queue.waitForCapture(record.id, 60_000);
  assert.equal(final?.status, 'succeeded', JSON.stringify(final?.error));
  assert.equal(final?.phase, null);
});

void test('a manifest the store refuses fails the capture in summary, the phase its record showed, and leaves nothing', async () => {
  h = await createHarness(redis.url);
  await h.addTarget('app', 5);
  // The world's file store with its manifest write refused, as a store that fails for good would (not retried).
  const store = h.store;
  const refusing = new Proxy(store, {
    get(t, name): unknown {
      if (name === 'putManifest') return async () => Promise.reject(new CaptureError('storage_failed', 'the store refused the manifest'));
      const v: unknown = Reflect.get(t, name);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(t) : v;
    },
  });
  await h.startWorker({}, { sink: refusing });
  const { record } = await h.queue.requestCapture({ targetId: 'app', trigger: { kind: 'rest', who: 'oncall', reason: 'test' } });
  const final = await h.queue.waitForCapture(record.id, 60_000);
  assert.equal(final?.status, 'failed');
  assert.equal(final?.error?.code, 'storage_failed');
  assert.equal(final?.error?.phase, 'summary', JSON.stringify(final?.error));
  assert.equal(final?.phase, 'summary');
  assert.deepEqual(await h.storedFiles(), [], 'the artifact and its summary removed with the manifest that failed');
});

void test('two workers, six forced captures of one target: never two snapshots in flight at the target', async () => {
  h = await createHarness(redis.url);
  const t = await h.addTarget('busy', 5);
  await Promise.all([h.startWorker({ concurrency: 2 }), h.startWorker({ concurrency: 2 })]);
  const ids: string[] = [];
  for (let i = 0; i < 6; i++) ids.push((await h.queue.requestCapture({ targetId: 'busy', trigger: { kind: 'rest', who: `u${i}` }, force: true })).record.id);
  const finals = await Promise.all(ids.map((id) => h!.queue.waitForCapture(id, 120_000)));
  assert.deepEqual(finals.map((r) => r?.status), Array(6).fill('succeeded'));
  assert.equal(t.proxy.snapshotCalls(), 6);
  assert.equal(t.proxy.maxInFlight(), 1, 'the target saw overlapping takeHeapSnapshot calls');
  // Four worker slots competed for one target: some had to wait for the lock.
  assert.ok((await h.queue.counters()).lock_waits > 0);
  assert.ok(finals.every((r) => r?.attempts === 1), 'lock waits do not spend attempts');
});
