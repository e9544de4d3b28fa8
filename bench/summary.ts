/**
 * Summary bench: what the streaming summary costs a capture, and what the
 * analysis costs in memory.
 *
 * Target: a Node 20 heap holder with HEAP_MB=300 (~520 MB snapshot) and one
 * with HEAP_MB=30 (~50 MB). Measured in one run:
 *
 * 1. Captures of the 500 MB target by our engine into a file, alternately
 *    without and with the summarizer in the sink's pipeline (a Transform
 *    before the file, behind the engine's spill buffer, so it can never slow
 *    the target's socket): capture wall time (medians of BENCH_SUMMARY_RUNS,
 *    default 3) and the capturing process's CPU.
 * 2. The summarizer alone on the 500 MB file, each in its own process
 *    (bench/lib/summary-child.ts), in 100 KiB chunks like CDP's: reading only
 *    (the baseline), inline on the main thread, and in a worker thread; its
 *    main-thread CPU over the baseline gives CPU-s per GB and MB/s. Peak RSS of
 *    the inline summarizer on the 50 MB and the 500 MB file (bounded memory).
 * 3. The analysis of the 500 MB file: wall, CPU, peak RSS, and bytes per node
 *    and per edge (its typed arrays, and RSS growth per node).
 *
 * Checks: the summarizer's main-thread CPU < 5% of the capture's wall time;
 * captures with the summary take < 5% longer (medians); the summarizer's peak
 * RSS < 150 MB and within 20 MB between the 50 MB and 500 MB snapshots.
 *
 * Run: npm run bench -- summary   (BENCH_SUMMARY_HEAP_MB, BENCH_SUMMARY_RUNS)
 */
import { createWriteStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { loadavg } from 'node:os';
import { captureHeapSnapshot } from '@heapcap/capture';
import { SummaryTee } from '@heapcap/analysis';
import { runHelper } from './lib/child.ts';
import { heapHolderTarget, withTarget } from './lib/targets.ts';
import { withScratchDir } from './lib/tmp.ts';
import { Checks, mb, median, ms, printTable, ratio, type Check } from './lib/report.ts';

const HEAP_MB = Number(process.env.BENCH_SUMMARY_HEAP_MB ?? 300);
const SMALL_HEAP_MB = 30;
const RUNS = Number(process.env.BENCH_SUMMARY_RUNS ?? 3);
const CHILD_TIMEOUT_MS = 20 * 60_000;

interface ChildResult {
  mode: string;
  bytes: number;
  wallMs: number;
  cpuMainMs: number;
  cpuAllMs: number;
  startRssKb: number;
  peakRssKb: number;
  nodeCount?: number;
  edgeCount?: number;
  memory?: { bytesPerNode: number; bytesPerEdge: number; stringBytes: number };
}

interface CaptureRun {
  summary: boolean;
  wallMs: number;
  cpuMs: number;
  bytes: number;
}

/** One capture of `inspect` into `path`, with or without the summarizer in the sink's pipeline. */
async function capture(inspect: string, path: string, summary: boolean): Promise<CaptureRun> {
  const cpu0 = process.cpuUsage();
  const tee = summary ? new SummaryTee() : undefined;
  const result = await captureHeapSnapshot({ endpoint: { kind: 'node', inspect } }, async (snapshot) =>
    tee === undefined ? pipeline(snapshot, createWriteStream(path)) : pipeline(snapshot, tee, createWriteStream(path)),
  );
  if (tee !== undefined && !tee.outcome.ok) throw tee.outcome.error;
  const cpu = process.cpuUsage(cpu0);
  return { summary, wallMs: result.timings.total, cpuMs: (cpu.user + cpu.system) / 1000, bytes: (await stat(path)).size };
}

const kbMb = (kb: number): string => mb(kb * 1024);

/** Runs the summary bench; returns its checks. */
export async function summaryBench(): Promise<Check[]> {
  const checks = new Checks('summary');
  console.log(`load average at start: ${loadavg().map((l) => l.toFixed(1)).join(' ')} (2 cores)`);
  return withScratchDir('summary', async (dir) => {
    const big = join(dir, 'big.heapsnapshot');
    const small = join(dir, 'small.heapsnapshot');
    const runs: CaptureRun[] = [];
    console.log(`target: Node 20 heap holder with HEAP_MB=${HEAP_MB} (building it takes a while)`);
    await withTarget(heapHolderTarget('system', HEAP_MB), async ({ inspect }) => {
      for (let i = 0; i < RUNS; i++) {
        for (const summary of i % 2 === 0 ? [false, true] : [true, false]) {
          const r = await capture(inspect, big, summary);
          console.log(`  capture ${summary ? 'with' : 'without'} summary: ${ms(r.wallMs)} ms, ${mb(r.bytes)} MB, capturer CPU ${ms(r.cpuMs)} ms`);
          runs.push(r);
        }
      }
    });
    await withTarget(heapHolderTarget('system', SMALL_HEAP_MB), async ({ inspect }) => {
      await capture(inspect, small, false);
    });

    const child = (mode: string, file: string): Promise<ChildResult> => runHelper<ChildResult>('./summary-child.ts', [mode, file], CHILD_TIMEOUT_MS);
    const read = await child('read', big);
    const inline = await child('inline', big);
    const worker = await child('worker', big);
    const inlineSmall = await child('inline', small);
    const analysis = await child('analyze', big);

    const plain = runs.filter((r) => !r.summary);
    const teed = runs.filter((r) => r.summary);
    const plainMs = median(plain.map((r) => r.wallMs));
    const teedMs = median(teed.map((r) => r.wallMs));
    const bytes = inline.bytes;
    const summaryCpuMs = inline.cpuMainMs - read.cpuMainMs;
    const cpuSecPerGb = summaryCpuMs / 1000 / (bytes / 1e9);

    console.log('');
    printTable(
      ['capture (500 MB target)', 'runs', 'median wall ms', 'median capturer CPU ms', 'snapshot MB'],
      [
        ['without summary', String(plain.length), ms(plainMs), ms(median(plain.map((r) => r.cpuMs))), mb(plain[0]?.bytes)],
        ['with summary (inline, in the sink pipeline)', String(teed.length), ms(teedMs), ms(median(teed.map((r) => r.cpuMs))), mb(teed[0]?.bytes)],
      ],
    );
    console.log('');
    printTable(
      ['standalone (100 KiB chunks)', 'snapshot MB', 'wall ms', 'main-thread CPU ms', 'all threads CPU ms', 'RSS before MB', 'peak RSS MB'],
      [read, inline, worker, inlineSmall, analysis].map((r) => [
        r === inlineSmall ? 'inline (50 MB snapshot)' : r.mode,
        mb(r.bytes),
        ms(r.wallMs),
        ms(r.cpuMainMs),
        ms(r.cpuAllMs),
        kbMb(r.startRssKb),
        kbMb(r.peakRssKb),
      ]),
    );
    const nodes = analysis.nodeCount ?? 0;
    const edges = analysis.edgeCount ?? 0;
    const arrays = analysis.memory === undefined ? 0 : nodes * analysis.memory.bytesPerNode + edges * analysis.memory.bytesPerEdge;
    const grownBytes = (analysis.peakRssKb - analysis.startRssKb) * 1024;
    console.log('');
    console.log(`summarizer: ${(summaryCpuMs / 1000).toFixed(2)} CPU-s on the main thread over reading alone for ${mb(bytes)} MB: ${cpuSecPerGb.toFixed(2)} CPU-s/GB, ${(bytes / 1e6 / (summaryCpuMs / 1000)).toFixed(0)} MB/s`);
    console.log(`worker thread: main thread ${ms(worker.cpuMainMs - read.cpuMainMs)} ms over reading (postMessage copies), all threads ${ms(worker.cpuAllMs)} ms vs inline ${ms(inline.cpuAllMs)} ms`);
    console.log(
      `analysis: ${nodes.toLocaleString('en-US')} nodes, ${edges.toLocaleString('en-US')} edges; typed arrays ${analysis.memory?.bytesPerNode ?? '-'} B/node + ${analysis.memory?.bytesPerEdge.toFixed(1) ?? '-'} B/edge = ${mb(arrays)} MB, strings ~${mb(analysis.memory?.stringBytes)} MB; RSS grew ${mb(grownBytes)} MB (${(grownBytes / Math.max(1, analysis.bytes)).toFixed(2)}x the snapshot)`,
    );
    console.log(`load average at end: ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
    console.log('');
    checks.expect(summaryCpuMs < 0.05 * plainMs, 'summarizer main-thread CPU < 5% of the capture wall time', `${ms(summaryCpuMs)} ms vs ${ms(plainMs)} ms (${((100 * summaryCpuMs) / plainMs).toFixed(1)}%)`);
    checks.expect(teedMs < 1.05 * plainMs, 'captures with the summary take < 5% longer (medians)', `${ms(teedMs)} vs ${ms(plainMs)} ms: ${ratio(teedMs / plainMs)}`);
    // Above reading alone: the child's own baseline (Node, tsx, the workspace packages it imports) moved between
    // runs (90-135 MB before the first byte); the capturing process's whole RSS is the rss bench's (bin/heapcap).
    const added = inline.peakRssKb - read.peakRssKb;
    checks.expect(added < 30 * 1024, 'the summarizer adds < 30 MB of peak RSS to reading the snapshot', `${kbMb(added)} MB (${kbMb(inline.peakRssKb)} vs ${kbMb(read.peakRssKb)} MB)`);
    checks.expect(Math.abs(inline.peakRssKb - inlineSmall.peakRssKb) < 20 * 1024, 'summarizer memory does not grow with the snapshot (within 20 MB)', `${kbMb(inlineSmall.peakRssKb)} vs ${kbMb(inline.peakRssKb)} MB`);
    return checks.list;
  });
}
