/**
 * Correctness against an independent parser: snapshots of a Node 20 target, a
 * Node 22 target and a Chromium page, captured over CDP by `heapcap capture`,
 * summarised and analysed by us and loaded by memlab (@memlab/core). Per-class
 * counts and self sizes must be equal for every class; the retained sizes of
 * our 20 largest classes within 1% of memlab's dominator tree.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { fixturePath, startChromium, startNodeTarget, tmpDir, type Chromium, type NodeTarget, type NodeVersion, type TmpDir } from '@heapcap/testkit';
import { AnalysisSchema, analyzeSnapshotFile, summarizeFile, type Analysis, type Summary } from '../src/index.ts';
import { memlabReference, type Reference } from './memlab-reference.ts';
import { captureWithCli } from './helpers.ts';

const MAX_BYTES = 1e9;
const DETACHED_DIVS = 50;

/** Everything we compute for one file, and memlab's reference. */
interface Compared {
  summary: Summary;
  analysis: Analysis;
  reference: Reference;
}

async function compare(file: string): Promise<Compared> {
  const summary = await summarizeFile(file);
  const analysis = AnalysisSchema.parse(await analyzeSnapshotFile(file, { maxBytes: MAX_BYTES }));
  const reference = await memlabReference(file);
  return { summary, analysis, reference };
}

function assertAgree({ summary, analysis, reference }: Compared, label: string): void {
  assert.equal(summary.nodeCount, reference.nodeCount, `${label}: node count`);
  assert.equal(analysis.nodeCount, reference.nodeCount);
  const ours = new Map(summary.classes.map((c) => [c.name, c]));
  assert.deepEqual([...ours.keys()].sort(), [...reference.classes.keys()].sort(), `${label}: the same classes`);
  for (const [name, ref] of reference.classes) {
    const row = ours.get(name);
    assert.deepEqual({ count: row?.count, selfSize: row?.selfSize }, { count: ref.count, selfSize: ref.selfSize }, `${label}: class ${name}`);
  }
  // The analysis groups exactly as the summary does.
  assert.deepEqual(
    new Map(analysis.classes.map((c) => [c.name, [c.count, c.selfSize]])),
    new Map(summary.classes.map((c) => [c.name, [c.count, c.selfSize]])),
    `${label}: analysis and summary classes`,
  );
  const top = analysis.classes.slice(0, 20);
  assert.equal(top.length, 20);
  for (const c of top) {
    const ref = reference.classes.get(c.name)?.retainedSize ?? NaN;
    assert.ok(Math.abs(c.retainedSize - ref) <= 0.01 * ref, `${label}: retained size of ${c.name}: ours ${c.retainedSize}, memlab ${ref}`);
  }
  assert.ok(analysis.dominators.length === 20 && analysis.dominators.every((d) => d.path !== null && d.path.length > 0), `${label}: 20 dominators with paths`);
}

void describe('summary and analysis agree with memlab', { timeout: 900_000 }, () => {
  let work: TmpDir;
  before(async () => {
    work = await tmpDir('heapcap-memlab');
  });
  after(async () => {
    await work?.cleanup();
  });

  for (const node of ['system', '22'] as NodeVersion[]) {
    void test(`a Node ${node} target`, async () => {
      let target: NodeTarget | undefined;
      try {
        target = await startNodeTarget({ node, script: fixturePath('heap-holder.cjs'), env: { HEAP_MB: '5' } });
        const file = await captureWithCli(['--node', `127.0.0.1:${target.port}`], `${work.path}/node-${node}`);
        const result = await compare(file);
        assertAgree(result, `node ${node}`);
        assert.equal(result.summary.classes.find((c) => c.name === 'Order')?.count, 5550);
        // The largest dominator is the array of orders the fixture keeps on a global.
        const holder = result.analysis.dominators.find((d) => d.class === 'Array');
        assert.ok(holder?.path?.some((s) => s.edge === '__heapcapHeld'), `path through the global: ${JSON.stringify(holder?.path)}`);
      } finally {
        await target?.kill();
      }
    });
  }

  void test('a Chromium page with detached DOM nodes', async () => {
    let chromium: Chromium | undefined;
    try {
      chromium = await startChromium();
      // Divs created and never inserted into the document: detached DOM nodes.
      const html =
        `<script>window.__detached = []; for (let i = 0; i < ${DETACHED_DIVS}; i++) { const d = document.createElement('div'); d.id = 'd' + i; window.__detached.push(d); }` +
        ` window.__orders = Array.from({ length: 3000 }, (_, i) => ({ id: 'order-' + i, items: [i, i + 1] }));</script><title>heapcap test page</title>`;
      await chromium.openPage(`data:text/html,${encodeURIComponent(html)}`);
      const file = await captureWithCli(['--chromium', `127.0.0.1:${chromium.port}`, '--url-pattern', '^data:'], `${work.path}/chromium`);
      const result = await compare(file);
      assertAgree(result, 'chromium');
      const divs = result.summary.detached?.classes.find((c) => c.name === '<div>');
      assert.ok(divs !== undefined && divs.count >= DETACHED_DIVS, `summary: detached divs ${JSON.stringify(result.summary.detached)}`);
      // After propagation, the analysis counts exactly what memlab counts.
      const ours = new Map(result.analysis.detached?.classes.map((c) => [c.name, c.count]));
      assert.deepEqual(ours, result.reference.detached, 'detached native nodes per class after propagation');
      assert.ok((ours.get('<div>') ?? 0) >= DETACHED_DIVS);
    } finally {
      await chromium?.close();
    }
  });
});
