/**
 * A sink slower than the target. The engine runs in a child process
 * (fixtures/throttled-capture.ts) so its peak RSS (VmHWM) is its own: one
 * capture with a consumer throttled to 20 MB/s and an 8 MiB ceiling, one
 * unthrottled reference capture of the same heap.
 *
 * A deterministic heap, found by trial on Node 22 (V8 12.4):
 * - Two captures of one idle process, even with gc, differ: each capture runs
 *   the preflight expressions in the target, and the snapshot records what they
 *   leave (one more FeedbackVector after the first capture; later, the node
 *   order alternated between consecutive captures). On Node 20 (V8 11.3)
 *   native (C++) nodes also get fresh address-derived ids in every snapshot.
 * - Two fresh processes of the same script with `--predictable --hash-seed=1
 *   --random-seed=1`, captured once each, are byte-identical (every pair so far: 2 of a 50 MB
 *   heap, 10 of this 30 MB one; without --predictable the node order differs).
 * - One more source of difference, from the engine: the headroom probe's
 *   regexes leave the cgroup's memory.current as the target's RegExp last-match
 *   subject (a new number every time). The fixture resets it before the
 *   snapshot; see its `beforeSnapshot`.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { childEnv, fixturePath, startNodeTarget, tmpDir, type TmpDir } from '@heapcap/testkit';
import type { SnapshotStreamStats } from '../src/index.ts';

const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const FIXTURE = fileURLToPath(new URL('./fixtures/throttled-capture.ts', import.meta.url));
const HEAP_MB = 30;
const CEILING = 8 * 1024 * 1024;
const RATE = 20_000_000;
/**
 * What the capturing process may add to its RSS beyond the ceiling: 128 MiB.
 * Measured at 20 MB/s with an 8 MiB ceiling: +52 to +90 MiB for this 55 MB
 * snapshot (13 runs, with async and with synchronous spill writes), +81 to
 * +115 MiB for an 89 MB one. Most of it is garbage,
 * not buffered data: snapshot chunks become Buffers (external
 * memory); those that wait in the ceiling or the Readable long enough to be
 * promoted are freed only by a full GC, which V8 starts when external memory
 * has grown 64 MiB since the last one. Add the young generation the chunk
 * strings churn through (16 MiB semi-spaces) and 1 MiB spill-read slices.
 * With forced GCs the live Buffers stayed under 25 MB. At this size an
 * unbounded buffer would stay under the bound too (measured +102 to +106 MiB
 * for the 89 MB snapshot with a 4 GiB ceiling), so `peakMemoryBytes <= ceiling`
 * is the check that catches unbounded buffering; this one catches gross leaks.
 */
const RSS_SLACK_KB = 128 * 1024;

/** What the fixture prints. */
interface ChildReport {
  rssBeforeKb: number;
  hwmBeforeKb: number;
  hwmAfterKb: number;
  sha256: string;
  stream: SnapshotStreamStats;
}

/** Starts a fresh deterministic target, runs the fixture against it, stops the target. */
async function captureFresh(out: string, rate: number, ceiling: number, spillDir: string): Promise<ChildReport> {
  const target = await startNodeTarget({
    node: '22',
    script: fixturePath('heap-holder.cjs'),
    nodeFlags: ['--predictable', '--hash-seed=1', '--random-seed=1'],
    env: { HEAP_MB: String(HEAP_MB) },
  });
  try {
    const args = ['--inspect', `127.0.0.1:${target.port}`, '--out', out, '--rate', String(rate), '--ceiling', String(ceiling), '--spill-dir', spillDir];
    return await runFixture(args);
  } finally {
    await target.kill();
  }
}

/** Runs the fixture to completion (deadline 150 s) and parses its report. */
function runFixture(args: string[]): Promise<ChildReport> {
  const child = spawn(process.execPath, ['--import', 'tsx', FIXTURE, ...args], { cwd: REPO_ROOT, env: childEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  return new Promise<ChildReport>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`throttled-capture did not finish within 150 s\n${stderr}`));
    }, 150_000);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      if (code !== 0) reject(new Error(`throttled-capture exited ${code}\n${stderr}`));
      else resolve(JSON.parse(stdout) as ChildReport);
    });
  });
}

const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

void describe('a sink slower than the target', { timeout: 300_000 }, () => {
  let work: TmpDir;
  let spill: TmpDir;
  let reference: ChildReport;
  let throttled: ChildReport;
  before(async () => {
    work = await tmpDir('heapcap-slow-sink');
    spill = await tmpDir('heapcap-slow-sink-spill');
    // The reference: no throttle and a ceiling it never reaches.
    reference = await captureFresh(join(work.path, 'reference.heapsnapshot'), 0, 1024 * 1024 * 1024, spill.path);
    throttled = await captureFresh(join(work.path, 'throttled.heapsnapshot'), RATE, CEILING, spill.path);
  });
  after(async () => {
    await work?.cleanup();
    await spill?.cleanup();
  });

  void test('chunks spill to disk, and the spill file is gone afterwards', async () => {
    assert.equal(reference.stream.spilledBytes, 0, 'the reference never spilled');
    assert.ok(throttled.stream.spilledBytes > 0, `spilled ${throttled.stream.spilledBytes} bytes`);
    assert.ok(throttled.stream.peakMemoryBytes <= CEILING, `at most the ceiling in memory: ${throttled.stream.peakMemoryBytes}`);
    assert.deepEqual(await readdir(spill.path), []);
  });

  void test('peak RSS stays under RSS before + ceiling + a constant', (t) => {
    const boundKb = throttled.rssBeforeKb + CEILING / 1024 + RSS_SLACK_KB;
    t.diagnostic(`RSS before ${throttled.rssBeforeKb} kB, peak ${throttled.hwmAfterKb} kB (+${throttled.hwmAfterKb - throttled.rssBeforeKb} kB), bound ${boundKb} kB; snapshot ${throttled.stream.bytes} bytes, spilled ${throttled.stream.spilledBytes}`);
    assert.ok(throttled.hwmAfterKb <= boundKb, `peak RSS ${throttled.hwmAfterKb} kB > ${boundKb} kB`);
  });

  void test('the throttled artifact is byte-identical to the unthrottled capture', async () => {
    const [a, b] = await Promise.all([readFile(join(work.path, 'reference.heapsnapshot')), readFile(join(work.path, 'throttled.heapsnapshot'))]);
    assert.equal(a.length, reference.stream.bytes);
    assert.equal(b.length, throttled.stream.bytes);
    assert.equal(sha256(a), reference.sha256);
    assert.equal(sha256(b), throttled.sha256);
    assert.equal(b.length, a.length, 'same size');
    assert.ok(a.equals(b), 'same bytes');
  });
});
