/**
 * The stub inspector (bench/scale.ts's thousands of targets) answers a real
 * capture: `bin/heapcap capture` against one stub target stores a snapshot
 * that parses, with a summary, and the engine sent nothing the stub does not know.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, test } from 'node:test';
import { assertSnapshotShape, countObjects, loadArtifact, readManifests, runHeapcap, startStubInspector, tmpDir } from '../src/index.ts';

void test('bin/heapcap capture of a stub target stores a valid snapshot and summary', async () => {
  const stub = await startStubInspector({ objects: 50 });
  const out = await tmpDir('heapcap-stub');
  after(async () => {
    await stub.close();
    await out.cleanup();
  });
  const res = await runHeapcap(['capture', '--ws', stub.wsUrl('svc-0001'), '--out', out.path, '--json'], { timeoutMs: 60_000 });
  assert.equal(res.code, 0, res.stderr);
  const manifest = await readManifests(res.stdout);
  assert.equal(manifest.transport?.used, 'cdp', 'the stub refuses the pipe like a remote target');
  const { snapshot, bytes } = await loadArtifact(manifest);
  assert.equal(bytes, Buffer.byteLength(stub.snapshot));
  assertSnapshotShape(snapshot);
  assert.equal(countObjects(snapshot, 'Session'), 10);
  const summaryPath = manifest.artifact.location.replace(/\.heapsnapshot\.gz$/, '.summary.json');
  const summary = JSON.parse(await readFile(summaryPath, 'utf8')) as { nodeCount: number; classes: { name: string; count: number }[] };
  assert.equal(summary.nodeCount, 101);
  assert.equal(summary.classes.find((c) => c.name === 'Order')?.count, 10);
  const stats = stub.stats();
  assert.deepEqual(stats.unknown, {}, 'the engine sent a method the stub does not answer: add it to stub-inspector.ts');
  assert.equal(stats.snapshots, 1);
  assert.equal(stats.overlaps, 0);
  assert.equal(stats.open, 0, 'the capture closed its session');
});
