/**
 * A leak hunt's snapshots fail like a capture's, because they take the same
 * path (the engine's takeSnapshot): a target SIGKILLed mid-snapshot fails the
 * hunt with target_closed, a full scratch disk with storage_failed, and
 * neither leaves a file behind. Real Redis, real Node targets, a real tmpfs.
 * And a hunt whose target had its heap profiler ids cleared in between (a
 * second inspector session came and went, on a Node target or a Chromium page)
 * is refused, never reported.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, before, test } from 'node:test';
import { promisify } from 'node:util';
import { CdpSession } from '@heapcap/capture';
import { startChromium, startRedis, tmpDir, waitFor, type RedisServer } from '@heapcap/testkit';
import { createHarness, type Harness } from './helpers/harness.ts';
import { runLeakHunt, type LeakHuntWorkerDeps } from '../src/leak-hunt.ts';

const run = promisify(execFile);

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

/** What the worker gives a hunt, with scratch files under `tempDir`. */
function deps(hh: Harness, tempDir: string): LeakHuntWorkerDeps {
  return { queue: hh.queue, sink: hh.store, log: hh.log, maxBytes: 1e9, tempDir, concurrency: 1, workerId: 'test-worker' };
}

/** The size of the hunt's baseline snapshot file so far, or undefined before it exists. */
async function baselineBytes(tempDir: string, huntId: string): Promise<number | undefined> {
  const dir = (await readdir(tempDir)).find((n) => n.startsWith(`heapcap-hunt-${huntId}-`));
  if (dir === undefined) return undefined;
  return stat(join(tempDir, dir, 'baseline.heapsnapshot')).then(
    (s) => s.size,
    () => undefined,
  );
}

void test('the target is SIGKILLed mid-snapshot: the hunt fails with target_closed and leaves no file', { timeout: 120_000 }, async () => {
  h = await createHarness(redis.url);
  const hh = h;
  const scratch = await tmpDir('heapcap-hunt-killed');
  hh.onCleanup(() => scratch.cleanup());
  // ~100 MB of snapshot: seconds of serialization to be killed in.
  const t = await hh.addTarget('victim', 60);
  const created = await hh.queue.leakHunts.create({ targetId: 'victim', intervalMs: 60_000, requestedBy: 'oncall' });
  const hunting = runLeakHunt(deps(hh, scratch.path), created.id, new AbortController().signal);
  const written = await waitFor(async () => {
    const bytes = await baselineBytes(scratch.path, created.id);
    return bytes !== undefined && bytes > 0 ? bytes : undefined;
  }, { timeoutMs: 60_000, intervalMs: 10, what: 'the baseline snapshot to reach its file' });
  process.kill(t.node.pid, 'SIGKILL');
  const done = await hunting;
  assert.ok(done !== null);
  assert.equal(done.status, 'failed');
  assert.equal(done.error?.code, 'target_closed', JSON.stringify(done.error));
  assert.equal(done.phase, 'baseline', `killed during the baseline snapshot (${written} bytes written)`);
  assert.deepEqual(done.snapshots, []);
  assert.equal((await hh.queue.leakHunts.get(created.id))?.error?.code, 'target_closed', 'the record says so');
  assert.deepEqual(await readdir(scratch.path), [], 'the hunt left nothing in its scratch directory');
});

void test('the scratch disk fills up mid-snapshot (ENOSPC on a 1 MiB tmpfs): the hunt fails with storage_failed and leaves no file', { timeout: 120_000 }, async () => {
  h = await createHarness(redis.url);
  const hh = h;
  // Needs root (the project's test machine runs as root), like the filesystem sink's full-disk test.
  const mnt = await mkdtemp(join(tmpdir(), 'heapcap-hunt-tmpfs-'));
  await run('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', mnt], { timeout: 10_000 });
  try {
    const t = await hh.addTarget('filler', 10);
    const created = await hh.queue.leakHunts.create({ targetId: 'filler', intervalMs: 60_000, requestedBy: 'oncall' });
    // The worker's HEAPCAP_SPILL_DIR becomes the hunt's tempDir (worker.ts): its scratch directory and spill file.
    const done = await runLeakHunt(deps(hh, mnt), created.id, new AbortController().signal);
    assert.ok(done?.error !== undefined, 'the hunt failed');
    assert.equal(done.status, 'failed');
    assert.equal(done.error.code, 'storage_failed', JSON.stringify(done.error));
    assert.match(done.error.message, /ENOSPC/);
    assert.match(done.error.hint ?? '', /free space/);
    assert.equal(done.phase, 'baseline');
    assert.deepEqual(await readdir(mnt), [], 'the partial snapshot and the hunt directory are gone');
    // The target was not harmed: it is still there to be captured.
    assert.equal(t.node.child.exitCode, null);
  } finally {
    await run('umount', [mnt], { timeout: 10_000 });
    await rm(mnt, { recursive: true, force: true });
  }
});

void test('another inspector session attaches and detaches mid-hunt (ids cleared): refused with snapshot_ids_reset, no report, the marker removed', { timeout: 120_000 }, async () => {
  h = await createHarness(redis.url);
  const hh = h;
  const scratch = await tmpDir('heapcap-hunt-reset');
  hh.onCleanup(() => scratch.cleanup());
  const t = await hh.addTarget('shared', 10);
  const created = await hh.queue.leakHunts.create({ targetId: 'shared', intervalMs: 3_000, requestedBy: 'oncall' });
  const hunting = runLeakHunt(deps(hh, scratch.path), created.id, new AbortController().signal);
  await waitFor(async () => ((await hh.queue.leakHunts.get(created.id))?.phase === 'wait' ? true : undefined), { timeoutMs: 60_000, intervalMs: 20, what: 'the hunt to wait after its baseline' });
  // A second client (DevTools, a debugger) attaches straight to the inspector, evaluates, detaches: V8 clears its ids.
  const other = await CdpSession.connect(t.node.wsUrl ?? '', { connectTimeoutMs: 10_000, commandTimeoutMs: 10_000 });
  await other.send('Runtime.evaluate', { expression: '1 + 1' });
  await other.close();
  const done = await hunting;
  assert.ok(done !== null);
  assert.equal(done.status, 'failed');
  assert.equal(done.error?.code, 'snapshot_ids_reset', JSON.stringify(done.error));
  // The second session closed during the wait: the map was cleared before the target snapshot. With allocation
  // tracking (the default) the hunt's session's 50 ms heap-stats timer walks the heap right after, so the marker
  // comes back renumbered rather than absent.
  assert.match(done.error.message, /seen before the target snapshot: the hunt's marker object was @\d+ and (is no longer in the id map|is now @\d+)/);
  assert.equal(done.phase, 'target');
  assert.deepEqual(done.snapshots.map((x) => x.name), ['baseline']);
  assert.match(done.error.hint ?? '', /another inspector session closed/);
  assert.equal(done.reportKey, undefined);
  assert.equal(done.classes, undefined);
  // The hunt took its marker back out of the target.
  const check = await CdpSession.connect(t.node.wsUrl ?? '', { connectTimeoutMs: 10_000, commandTimeoutMs: 10_000 });
  const left = await check.send('Runtime.evaluate', { expression: "Object.keys(globalThis).filter((k) => k.startsWith('__heapcapHuntMarker_')).length", returnByValue: true });
  await check.close();
  assert.equal(left.result.value, 0);
});

void test('another inspector session attaches to a Chromium page and detaches mid-hunt: refused with snapshot_ids_reset, no report', { timeout: 180_000 }, async () => {
  h = await createHarness(redis.url);
  const hh = h;
  const scratch = await tmpDir('heapcap-hunt-reset-page');
  hh.onCleanup(() => scratch.cleanup());
  const chromium = await startChromium();
  hh.onCleanup(() => chromium.close());
  const page = await chromium.openPage(`data:text/html,${encodeURIComponent('<title>heapcap test page</title><body><p>hunted</p></body>')}`);
  await hh.queue.targets.put({ id: 'page', kind: 'chromium', browser: `127.0.0.1:${chromium.port}`, select: { urlPattern: '^data:' }, labels: { service: 'test' } });
  const created = await hh.queue.leakHunts.create({ targetId: 'page', intervalMs: 3_000, requestedBy: 'oncall' });
  const hunting = runLeakHunt(deps(hh, scratch.path), created.id, new AbortController().signal);
  await waitFor(async () => ((await hh.queue.leakHunts.get(created.id))?.phase === 'wait' ? true : undefined), { timeoutMs: 90_000, intervalMs: 20, what: 'the hunt to wait after its baseline' });
  // DevTools opened on the page and closed again: the page's V8 clears its heap object ids.
  const other = await CdpSession.connect(page.webSocketDebuggerUrl, { connectTimeoutMs: 10_000, commandTimeoutMs: 10_000 });
  await other.send('Runtime.evaluate', { expression: '1 + 1' });
  await other.close();
  const done = await hunting;
  assert.ok(done !== null);
  assert.equal(done.status, 'failed', JSON.stringify(done));
  assert.equal(done.error?.code, 'snapshot_ids_reset', JSON.stringify(done.error));
  assert.deepEqual(done.snapshots.map((x) => x.name), ['baseline']);
  assert.equal(done.reportKey, undefined);
  assert.equal(done.classes, undefined);
});
