/**
 * `heapcap capture --node` against real Node 20 and Node 22 targets holding
 * ~50 MB of known objects: the artifact parses and is complete, the manifest
 * (stdout and file) adds up, and `warm: auto` decides by V8 version.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { assertGoodArtifact, countObjects, fixturePath, heapHolderShape, startNodeTarget, tmpDir, type NodeTarget, type NodeVersion, type TmpDir, readManifests } from '@heapcap/testkit';
import type { CaptureManifest } from '@heapcap/storage/file';
import { listFiles, runCli } from './cli-harness.ts';

const HEAP_MB = 50;

/** One capture of one target, shared by the tests of its describe block. */
function captureOnce(version: NodeVersion): () => Promise<CaptureManifest> {
  let target: NodeTarget | undefined;
  let out: TmpDir | undefined;
  let manifest: Promise<CaptureManifest> | undefined;
  before(async () => {
    target = await startNodeTarget({ node: version, script: fixturePath('heap-holder.cjs'), env: { HEAP_MB: String(HEAP_MB) } });
    out = await tmpDir('heapcap-cli-node');
  });
  after(async () => {
    await target?.kill();
    await out?.cleanup();
  });
  return () =>
    (manifest ??= (async () => {
      assert.ok(target?.port !== undefined && out !== undefined);
      const res = await runCli(['--node', `127.0.0.1:${target.port}`, '--out', out.path, '--json']);
      assert.equal(res.code, 0, `exit code; stderr:\n${res.stderr}`);
      const m = await readManifests(res.stdout);
      // Exactly the snapshot, its manifest and its summary: no temp file, nothing else.
      const files = await listFiles(out.path);
      const beside = (suffix: string): string => m.artifact.key.replace(/\.heapsnapshot\.gz$/, suffix);
      assert.deepEqual(files, [m.artifact.key, beside('.manifest.json'), beside('.summary.json')].sort());
      assert.equal(m.summary?.key, beside('.summary.json'));
      assert.equal(m.runtime.pid, target.pid, 'the manifest names the target process');
      return m;
    })());
}

void describe('capture a Node 20 target (V8 11.3)', { timeout: 180_000 }, () => {
  const manifest = captureOnce('system');

  void test('the artifact is a complete heap snapshot of the target, manifest adds up', async () => {
    const m = await manifest();
    assert.match(m.runtime.version, /^v20\./);
    const snapshot = await assertGoodArtifact(m);
    assert.equal(countObjects(snapshot, 'Order'), heapHolderShape(HEAP_MB).orders, 'every Order the target holds');
  });

  void test('warm: auto warms on V8 11.3 and says why', async () => {
    const m = await manifest();
    assert.match(m.runtime.v8Version ?? '', /^11\.3\./);
    assert.equal(m.options.warm, 'auto');
    assert.equal(m.warm.mode, 'auto');
    assert.equal(m.warm.decision, 'warmed');
    assert.match(m.warm.reason, /< 11\.5\.130/);
    assert.equal(m.warm.method, 'debugger');
    assert.ok((m.warm.durationMs ?? 0) > 0, 'the warm step was timed');
    assert.ok(m.timings.warm >= (m.warm.durationMs ?? 0) - 1, 'the warm phase contains the warm step');
  });
});

void describe('capture a Node 22 target (V8 12.4)', { timeout: 180_000 }, () => {
  const manifest = captureOnce('22');

  void test('the artifact is a complete heap snapshot of the target, manifest adds up', async () => {
    const m = await manifest();
    assert.match(m.runtime.version, /^v22\./);
    const snapshot = await assertGoodArtifact(m);
    assert.equal(countObjects(snapshot, 'Order'), heapHolderShape(HEAP_MB).orders, 'every Order the target holds');
  });

  void test('warm: auto skips on V8 12.4 and says why', async () => {
    const m = await manifest();
    assert.match(m.runtime.v8Version ?? '', /^12\.4\./);
    assert.equal(m.warm.mode, 'auto');
    assert.equal(m.warm.decision, 'skipped');
    assert.match(m.warm.reason, />= 11\.5\.130/);
    assert.equal(m.warm.method, undefined);
    assert.equal(m.warm.durationMs, undefined);
  });
});
