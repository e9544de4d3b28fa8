/**
 * The local pipe transport: a Node.js target on this host writes its snapshot
 * with its own writeHeapSnapshot() into a FIFO heapcap reads. `auto` (the
 * default) uses it where the target shares the pipe directory and falls back to
 * CDP where it does not (another mount namespace, a browser), saying why;
 * `pipe` required where impossible is refused before the target is paused; a
 * target that dies mid-write leaves nothing behind.
 */
import assert from 'node:assert/strict';
import { mkdir, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  assertGoodArtifact,
  countObjects,
  fixturePath,
  heapHolderShape,
  readManifests,
  startNodeTarget,
  tmpDir,
  type NodeTarget,
  type NodeVersion,
  type TmpDir,
} from '@heapcap/testkit';
import { EXIT } from '../src/exit-codes.ts';
import { listFiles, runCli, startCli } from './cli-harness.ts';

const HEAP_MB = 10;

void describe('the local pipe transport', { timeout: 300_000 }, () => {
  let work: TmpDir;
  before(async () => {
    work = await tmpDir('heapcap-cli-pipe');
  });
  after(async () => {
    await work?.cleanup();
  });

  for (const version of ['system', '22'] as NodeVersion[]) {
    void test(`auto takes a Node ${version} target on this host through the pipe; the snapshot is complete`, async (t) => {
      const target = await startNodeTarget({ node: version, script: fixturePath('heap-holder.cjs'), env: { HEAP_MB: String(HEAP_MB) } });
      t.after(() => target.kill());
      const pipeDir = join(work.path, `pipes-${version}`);
      await mkdir(pipeDir);
      const res = await runCli(['--node', `127.0.0.1:${target.port}`, '--out', join(work.path, `out-${version}`), '--pipe-dir', pipeDir, '--json']);
      assert.equal(res.code, 0, res.stderr);
      const m = await readManifests(res.stdout);
      assert.deepEqual(m.transport, { requested: 'auto', used: 'pipe', reason: 'the target shares the pipe directory' });
      assert.equal(countObjects(await assertGoodArtifact(m), 'Order'), heapHolderShape(HEAP_MB).orders);
      assert.deepEqual(await readdir(pipeDir), [], 'the FIFO and its directory are gone');
    });
  }

  void test('a target in another mount namespace does not see the pipe directory: auto falls back to CDP, pipe is refused', async (t) => {
    const pipeDir = join(work.path, 'private');
    await mkdir(pipeDir);
    // The same path, another directory: a tmpfs mounted over it in the target's own mount namespace.
    const target: NodeTarget = await startNodeTarget({
      script: fixturePath('heap-holder.cjs'),
      env: { HEAP_MB: '2' },
      wrap: (bin, argv) => ['unshare', ['--mount', '--propagation', 'private', 'sh', '-c', `mount -t tmpfs tmpfs "$0" && exec "$@"`, pipeDir, bin, ...argv]],
    });
    t.after(() => target.kill());
    const auto = await runCli(['--node', `127.0.0.1:${target.port}`, '--out', join(work.path, 'ns-auto'), '--pipe-dir', pipeDir, '--json']);
    assert.equal(auto.code, 0, auto.stderr);
    const m = await readManifests(auto.stdout);
    assert.equal(m.transport?.used, 'cdp');
    assert.match(m.transport?.reason ?? '', /does not share .* with heapcap/);
    await assertGoodArtifact(m);

    const out = join(work.path, 'ns-pipe');
    const required = await runCli(['--node', `127.0.0.1:${target.port}`, '--out', out, '--pipe-dir', pipeDir, '--transport', 'pipe']);
    assert.equal(required.code, EXIT.usage, required.stderr);
    assert.match(required.stderr, /^invalid_input: the pipe transport is not possible for this target: the target does not share/);
    assert.deepEqual(await listFiles(out), [], 'refused before anything was written');
    assert.deepEqual(await readdir(pipeDir), []);
  });

  void test('a target frozen in its writeHeapSnapshot(): protocol_timeout at the deadline, prompt exit, nothing left', async (t) => {
    const target = await startNodeTarget({ script: fixturePath('heap-holder.cjs'), env: { HEAP_MB: '50' } });
    t.after(async () => {
      // A stopped process does not act on SIGTERM until it is continued.
      process.kill(target.pid, 'SIGCONT');
      await target.kill();
    });
    const pipeDir = join(work.path, 'frozen');
    await mkdir(pipeDir);
    const out = join(work.path, 'frozen-out');
    const cli = startCli(['--node', `127.0.0.1:${target.port}`, '--out', out, '--pipe-dir', pipeDir, '--transport', 'pipe', '--timeout', '5', '--quiet']);
    t.after(() => cli.kill());
    // The FIFO exists once the target has been asked (or is about) to write into it.
    await waitForFifo(pipeDir);
    const frozenAt = performance.now();
    process.kill(target.pid, 'SIGSTOP');
    const res = await cli.done;
    assert.equal(res.code, EXIT.snapshot, res.stderr);
    assert.match(res.stderr, /^protocol_timeout: the target's writeHeapSnapshot\(\) \(pipe transport\) got no answer within 5000 ms/);
    assert.ok(res.endedAt - frozenAt <= 5_000 + 4_000, `exited ${Math.round(res.endedAt - frozenAt)} ms after the freeze (deadline 5000 ms)`);
    assert.deepEqual(await listFiles(out), []);
    assert.deepEqual(await readdir(pipeDir), []);
  });

  void test('the target dies while writing into the pipe: target_closed, no artifact, no FIFO left', async (t) => {
    const target = await startNodeTarget({ script: fixturePath('heap-holder.cjs'), env: { HEAP_MB: '150' } });
    t.after(() => target.kill('SIGKILL'));
    const pipeDir = join(work.path, 'dying');
    await mkdir(pipeDir);
    const out = join(work.path, 'dying-out');
    const run = startCli(['--node', `127.0.0.1:${target.port}`, '--out', out, '--pipe-dir', pipeDir, '--transport', 'pipe']);
    t.after(() => run.kill());
    // Kill it once the first bytes are through the pipe: the store's temp file has grown.
    await waitForWrite(out);
    process.kill(target.pid, 'SIGKILL');
    const res = await run.done;
    assert.equal(res.code, EXIT.target, res.stderr);
    assert.match(res.stderr, /^target_closed: /);
    assert.deepEqual(await listFiles(out), [], 'no artifact, no temp file');
    assert.deepEqual(await readdir(pipeDir), [], 'no FIFO left');
  });
});

/** Until heapcap has made its FIFO. */
async function waitForFifo(pipeDir: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    for (const dir of await readdir(pipeDir)) {
      if ((await readdir(join(pipeDir, dir)).catch((): string[] => [])).includes('snapshot.fifo')) return;
    }
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error(`no FIFO appeared in ${pipeDir} within 60 s`);
}

/** Until the store's temp file under `out` holds bytes: the snapshot is flowing through the pipe. */
async function waitForWrite(out: string): Promise<void> {
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    for (const file of await listFiles(out)) {
      if (((await stat(join(out, file)).catch(() => undefined))?.size ?? 0) > 0) return;
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`no snapshot bytes under ${out} within 120 s`);
}
