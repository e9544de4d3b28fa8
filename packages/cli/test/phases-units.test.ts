/**
 * The CLI says exactly what it measured: sizes in MiB (the unit its size flags
 * take), and a phase clock where `gc` is 0 unless a GC was asked for, the
 * HeapProfiler.enable round trip being timed as `enable`.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, describe, test } from 'node:test';
import { PHASES } from '@heapcap/capture';
import { assertTimingsAddUp, fixturePath, startNodeTarget, tmpDir, type NodeTarget, type TmpDir } from '@heapcap/testkit';
import { progressText } from '../src/progress.ts';
import type { CaptureManifest } from '@heapcap/storage/file';
import { runCli } from './cli-harness.ts';

/** Computed here, not with the code under test: bytes / 2^20, one decimal. */
const mib = (bytes: number): string => `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;

void describe('units and phases of heapcap capture', { timeout: 180_000 }, () => {
  let target: NodeTarget;
  let out: TmpDir;
  before(async () => {
    target = await startNodeTarget({ script: fixturePath('heap-holder.cjs'), env: { HEAP_MB: '10' } });
    out = await tmpDir('heapcap-cli-units');
  });
  after(async () => {
    await target?.kill();
    await out?.cleanup();
  });

  /** One human-readable capture; returns its stdout and the manifest it points to. */
  async function capture(extra: string[]): Promise<{ stdout: string; m: CaptureManifest }> {
    const res = await runCli(['--node', `127.0.0.1:${target.port}`, '--out', out.path, ...extra]);
    assert.equal(res.code, 0, `exit code; stderr:\n${res.stderr}`);
    const path = /^ {2}manifest {3}(\S+)$/m.exec(res.stdout)?.[1];
    assert.ok(path !== undefined, `the summary names the manifest:\n${res.stdout}`);
    return { stdout: res.stdout, m: JSON.parse(await readFile(path, 'utf8')) as CaptureManifest };
  }

  void test('without --gc: gc is 0 ms, HeapProfiler.enable is timed as enable, sizes print in MiB', async () => {
    const { stdout, m } = await capture([]);
    assert.deepEqual(PHASES, ['connect', 'preflight', 'warm', 'enable', 'gc', 'generate', 'serialize', 'sink']);
    assert.equal(m.options.gc, false);
    assert.equal(m.timings.gc, 0, 'no GC was asked for, none was timed');
    assert.ok(m.timings.enable > 0, `enable: ${m.timings.enable}`);
    assertTimingsAddUp(m.timings);
    assert.match(stdout, /^ {2}enable +\d+\.\d$/m);
    assert.match(stdout, /^ {2}gc +0\.0$/m);
    // Every size in the summary, in MiB.
    // The heap total is not a limit: not "X of Y" (issue 40).
    assert.ok(stdout.includes(`  heap used  ${mib(m.heap.usedBytes)} (heap total ${mib(m.heap.totalBytes)})\n`), stdout);
    assert.ok(stdout.includes(`  snapshot   ${mib(m.artifact.bytesUncompressed)} → ${mib(m.artifact.bytesStored)} gzip,`), stdout);
    assert.ok(stdout.includes(`  headroom   estimate +${mib(m.estimate.extraBytes)}, `), stdout);
    assert.doesNotMatch(stdout, /\d MB\b/, 'no decimal megabytes anywhere');
  });

  void test('--dry-run prints its sizes in MiB too: no KB, MB or GB for a power-of-1024 value', async () => {
    const res = await runCli(['--node', `127.0.0.1:${target.port}`, '--dry-run']);
    assert.equal(res.code, 0, res.stderr);
    assert.match(res.stdout, /^ {2}heap used +\d+\.\d MiB \(V8 heap limit \d+\.\d MiB\)$/m, res.stdout);
    assert.match(res.stdout, /^ {2}estimate +\+\d+\.\d MiB during the snapshot/m, res.stdout);
    assert.doesNotMatch(res.stdout + res.stderr, /\d ?(?:KB|MB|GB)\b/, 'no decimal-unit spelling anywhere');
  });

  void test('with --gc: the collection is timed as gc, after enable', async () => {
    const { m } = await capture(['--gc']);
    assert.equal(m.options.gc, true);
    assert.ok(m.timings.gc > 0, `gc: ${m.timings.gc}`);
    assert.ok(m.timings.enable > 0, `enable: ${m.timings.enable}`);
    assertTimingsAddUp(m.timings);
  });

  void test('--help gives every size flag in MiB', async () => {
    const res = await runCli(['--help']);
    assert.equal(res.code, 0);
    assert.match(res.stdout, /^ {2}--memory-ceiling MiB /m);
    assert.match(res.stdout, /^ {2}--memory-limit MiB /m);
    assert.doesNotMatch(res.stdout, /\bMB\b/);
  });

  void test('the progress line counts seconds, MiB and MiB/s', () => {
    const t0 = 1_000_000;
    const text = progressText({ phase: 'serialize', phaseStartedAt: t0 + 3000, bytes: { count: 10 * 1024 * 1024, at: t0 + 5000, spilled: 3 * 1024 * 1024 } }, t0, t0 + 5500);
    assert.equal(text, 'serialize    2.5 s (total 5.5 s)  10.0 MiB  at 5.0 MiB/s  (spilled 3.0 MiB)');
    assert.match(progressText({ phase: 'generate', phaseStartedAt: t0 }, t0, t0 + 12_300), /^generate {4}12\.3 s \(total 12\.3 s\) {2}the target is building its snapshot/);
  });
});
