/**
 * The analysis beside the real capture engine, the way the pipeline will use
 * it: a SummaryTee in the sink's pipeline summarizes exactly the bytes stored;
 * and a leak hunt over three snapshots taken on ONE inspector session (the
 * only way V8 keeps the object ids, docs/inspector-facts.md) names the leaked
 * class and not the transient one.
 */
import assert from 'node:assert/strict';
import { createWriteStream } from 'node:fs';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { captureHeapSnapshot, CdpSession } from '@heapcap/capture';
import { leakHunt, summarizeFile, SummaryTee } from '@heapcap/analysis';
import { startNodeTarget, tmpDir, type NodeTarget, type TmpDir } from '@heapcap/testkit';

const LEAK_TARGET = fileURLToPath(new URL('../../analysis/test/fixtures/leak-target.cjs', import.meta.url));
const N = 3000;

/** One snapshot on an open session (HeapProfiler already enabled), streamed to `path`. */
async function snapshotOn(session: CdpSession, path: string): Promise<string> {
  const out = createWriteStream(path);
  const off = session.on('HeapProfiler.addHeapSnapshotChunk', (p) => out.write(p.chunk));
  try {
    await session.send('HeapProfiler.takeHeapSnapshot', { reportProgress: false }, 300_000);
  } finally {
    off();
    await new Promise<void>((resolve, reject) => out.end((err?: Error | null) => (err ? reject(err) : resolve())));
  }
  return path;
}

void describe('analysis beside the capture engine', { timeout: 300_000 }, () => {
  let target: NodeTarget;
  let work: TmpDir;
  before(async () => {
    work = await tmpDir('heapcap-analysis-pipeline');
    target = await startNodeTarget({ script: LEAK_TARGET });
  });
  after(async () => {
    await target?.kill();
    await work?.cleanup();
  });

  void test('a SummaryTee in the sink pipeline summarizes exactly what was stored', async () => {
    const file = join(work.path, 'teed.heapsnapshot');
    const tee = new SummaryTee();
    await captureHeapSnapshot({ endpoint: { kind: 'node', inspect: `127.0.0.1:${target.port}` } }, (snapshot) => pipeline(snapshot, tee, createWriteStream(file)));
    assert.ok(tee.outcome.ok);
    assert.deepEqual(tee.outcome.summary, await summarizeFile(file));
    assert.equal(tee.outcome.summary.classes.find((c) => c.name === 'Größe漢字')?.count, 7);
  });

  void test('a leak hunt over three snapshots of one CDP session', async () => {
    const session = await CdpSession.connect(target.wsUrl as string, { connectTimeoutMs: 10_000, commandTimeoutMs: 60_000 });
    let files: string[];
    try {
      await session.send('HeapProfiler.enable');
      const baseline = await snapshotOn(session, join(work.path, 'baseline.heapsnapshot'));
      await target.request(`leak ${N}`, 'LEAKED');
      await target.request('transient 1000', 'TRANSIENT');
      const mid = await snapshotOn(session, join(work.path, 'target.heapsnapshot'));
      await target.request('free', 'FREED');
      const final = await snapshotOn(session, join(work.path, 'final.heapsnapshot'));
      files = [baseline, mid, final];
      await session.send('HeapProfiler.disable');
    } finally {
      await session.close();
    }
    const [baseline, mid, final] = files as [string, string, string];
    const hunt = await leakHunt(baseline, mid, final, { maxBytes: 1e9 });
    const leaked = hunt.classes.find((c) => c.name === 'Leaked');
    assert.equal(leaked?.count, N, hunt.classes.map((c) => `${c.name} ${c.count}`).join(', '));
    assert.equal(hunt.classes.find((c) => c.name === 'Transient'), undefined);
    assert.ok(leaked.representative.path?.some((s) => s.edge === '__leaks'));
  });
});
