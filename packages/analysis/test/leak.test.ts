/**
 * A leak fixture: a Node target adds N instances of `Leaked` (kept on
 * `globalThis.__leaks`) and M of `Transient` between two captures, then frees
 * the Transients before a third. The diff's top grower is `Leaked` with a count
 * delta of exactly N; the leak hunt names `Leaked` (count N) with a retainer
 * path through the global that holds it, and never `Transient`. A hunt over
 * snapshots whose heap profiler ids were cleared in between is refused.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { tmpDir, type NodeTarget, type TmpDir } from '@heapcap/testkit';
import { isCaptureError } from '@heapcap/errors';
import { diffSummaries, formatPath, leakHunt, LeakHuntSchema, summarizeFile, SummaryDiffSchema, topGrowth, analyzeSnapshotFile } from '../src/index.ts';
import { captureWithCli, startLeakTarget, writeSnapshot } from './helpers.ts';

const N = 5000;
const M = 2000;
const MAX_BYTES = 1e9;

void describe('leak fixture', { timeout: 600_000 }, () => {
  let work: TmpDir;
  let target: NodeTarget;
  const files = { baseline: '', target: '', final: '' };

  before(async () => {
    work = await tmpDir('heapcap-leak');
    target = await startLeakTarget();
    // In-process snapshots: V8's own writer, heap profiler ids kept between them.
    files.baseline = await writeSnapshot(target, join(work.path, 'baseline.heapsnapshot'));
    await target.request(`leak ${N}`, 'LEAKED');
    await target.request(`transient ${M}`, 'TRANSIENT');
    files.target = await writeSnapshot(target, join(work.path, 'target.heapsnapshot'));
    await target.request('free', 'FREED');
    files.final = await writeSnapshot(target, join(work.path, 'final.heapsnapshot'));
  });
  after(async () => {
    await target?.kill();
    await work?.cleanup();
  });

  void test('the diff names Leaked as the top grower, count delta exactly N', async () => {
    const base = await summarizeFile(files.baseline);
    const head = await summarizeFile(files.target);
    const diff = SummaryDiffSchema.parse(diffSummaries(base, head));
    const [top] = diff.classes;
    assert.equal(top?.name, 'Leaked', `top growers: ${JSON.stringify(diff.classes.slice(0, 5))}`);
    assert.equal(top.status, 'new');
    assert.equal(top.countDelta, N);
    assert.equal(diff.classes.find((c) => c.name === 'Transient')?.countDelta, M);
    const growth = topGrowth(diff, 5);
    assert.equal(growth.length, 5);
    assert.deepEqual(growth[0], { name: 'Leaked', countDelta: N, selfSizeDelta: top.selfSizeDelta });
    assert.equal(diff.retained, false);
    // Vanished classes are listed too: Transient is gone between target and final.
    const back = diffSummaries(head, await summarizeFile(files.final));
    assert.equal(back.classes.find((c) => c.name === 'Transient')?.status, 'vanished');
  });

  void test('with both analyses, the diff carries retained size deltas', async () => {
    const [baseAnalysis, headAnalysis] = [await analyzeSnapshotFile(files.baseline, { maxBytes: MAX_BYTES }), await analyzeSnapshotFile(files.target, { maxBytes: MAX_BYTES })];
    const diff = diffSummaries(await summarizeFile(files.baseline), await summarizeFile(files.target), { baseAnalysis, headAnalysis });
    assert.equal(diff.retained, true);
    const leaked = diff.classes.find((c) => c.name === 'Leaked');
    assert.ok(leaked?.retainedSizeDelta !== undefined && leaked.retainedSizeDelta >= leaked.selfSizeDelta, JSON.stringify(leaked));
  });

  void test('the leak hunt names Leaked with its path to the global, and not Transient', async () => {
    const hunt = LeakHuntSchema.parse(await leakHunt(files.baseline, files.target, files.final, { maxBytes: MAX_BYTES }));
    const leaked = hunt.classes.find((c) => c.name === 'Leaked');
    assert.ok(leaked !== undefined, `classes: ${hunt.classes.map((c) => c.name).join(', ')}`);
    assert.equal(leaked.count, N);
    assert.equal(hunt.classes[0]?.name, 'Leaked', 'the largest surviving class');
    assert.equal(hunt.classes.find((c) => c.name === 'Transient'), undefined, 'allocated and freed in between: not a leak');
    const path = leaked.representative.path;
    assert.ok(path !== null);
    const text = formatPath(path);
    // (root) → .N global → .__leaks Array → .elements (array) → [i] Leaked
    assert.equal(path[0]?.class, 'global', text);
    assert.deepEqual(path[1] && { edge: path[1].edge, class: path[1].class }, { edge: '__leaks', class: 'Array' }, text);
    assert.equal(path.at(-1)?.class, 'Leaked', text);
    assert.equal(path.at(-1)?.id, leaked.representative.id);
  });

  void test("the leak hunt's suspects rank and fold as a diff's do: Leaked first, held by `__leaks` (Array), the same holder as the diff's", async () => {
    const hunt = LeakHuntSchema.parse(await leakHunt(files.baseline, files.target, files.final, { maxBytes: MAX_BYTES }));
    const suspects = hunt.suspects?.suspects ?? [];
    const table = suspects.map((s) => `${s.rank}. ${s.reason}`).join('\n');
    assert.equal(hunt.suspects?.mode, 'graph');
    const [top] = suspects;
    assert.ok(top !== undefined, 'no suspects');
    assert.equal(top.class, 'Leaked', table);
    assert.equal(top.countDelta, N, table);
    assert.deepEqual(top.holder && { class: top.holder.class, edge: top.holder.edge, via: top.holder.via }, { class: 'Array', edge: '__leaks', via: null }, table);
    assert.match(top.reason, /^\+5,000 elements in `__leaks` \(Array\): 5,000 Leaked \(\+[\d.]+ KiB\)/);
    assert.equal(top.path?.at(-1)?.class, 'Leaked');
    assert.equal(suspects.find((s) => s.class === 'Transient'), undefined, table);
    // The diff of baseline → target names the same suspect with the same holder: one ranking for both.
    const [baseAnalysis, headAnalysis] = [await analyzeSnapshotFile(files.baseline, { maxBytes: MAX_BYTES }), await analyzeSnapshotFile(files.target, { maxBytes: MAX_BYTES })];
    const diff = diffSummaries(await summarizeFile(files.baseline), await summarizeFile(files.target), { baseAnalysis, headAnalysis });
    const d = diff.suspects.suspects.find((s) => s.class === 'Leaked');
    assert.deepEqual(d?.holder, top.holder);
    assert.equal(d?.countDelta, top.countDelta);
  });

  void test('snapshots whose ids were cleared in between (separate inspector sessions) are refused', async () => {
    // Each `heapcap capture` opens and closes its own session; closing a
    // session clears V8's heap profiler ids (docs/inspector-facts.md).
    const cli = ['--node', `127.0.0.1:${target.port}`];
    const a = await captureWithCli(cli, join(work.path, 'cli-a'));
    await target.request('leak 10', 'LEAKED');
    const b = await captureWithCli(cli, join(work.path, 'cli-b'));
    const c = await captureWithCli(cli, join(work.path, 'cli-c'));
    await assert.rejects(leakHunt(a, b, c, { maxBytes: MAX_BYTES }), (err: unknown) => {
      assert.ok(isCaptureError(err, 'invalid_input'), String(err));
      assert.match(err.message, /do not share object ids/);
      assert.match(err.hint ?? '', /one inspector session/);
      return true;
    });
  });
});
