/**
 * Suspects bench: what leak suspects cost on a pair of ~500 MB snapshots,
 * against the plain analysis, measured in the same run.
 *
 * Targets: two Node heap holders, HEAP_MB-20 and HEAP_MB (default 300, ~520 MB
 * snapshot) of Order/LineItem objects, captured by our engine into files: the
 * pair a scheduled series gives (the head holds 20 MB of orders more).
 * Suspects compare groups, not object ids, so two processes make a fair pair.
 *
 * Each measurement runs in its own process (bench/lib/suspects-child.ts), so
 * its peak RSS (VmHWM) is its own:
 * 1. the analysis of the head file without the suspects' grouping (the
 *    baseline) and with it (what the worker runs): CPU-s and peak RSS;
 * 2. the whole pair as a diff with suspects needs it: both summaries, both
 *    analyses one after the other, the diff (CPU-s, peak RSS, the first
 *    suspect);
 * 3. summary-only suspects (both summaries and the diff): what GET /v1/diff
 *    answers before the analyses exist.
 *
 * Checks: the grouping adds < 50% CPU and < 15% peak RSS to the analysis; the
 * pair's first suspect is the Order class, in graph mode. Measured here (a
 * 517.6 MB snapshot, 5.7 M nodes): +2.9 CPU-s over 8.8 (1.33x), peak RSS
 * 1.02x (docs/analysis.md, "What suspects cost"). The limits guard against
 * regressions; they are not the target.
 *
 * With BENCH_SUSPECTS_COMPARE=DIR (a checkout of an older commit with its
 * dependencies installed), the pair is also run through DIR's code, alternated
 * with this checkout's, and checked to cost < 1.1x its CPU (issue 37).
 *
 * Run: npm run bench -- suspects   (BENCH_SUSPECTS_HEAP_MB, BENCH_SUSPECTS_COMPARE)
 */
import { createWriteStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { loadavg } from 'node:os';
import { captureHeapSnapshot } from '@heapcap/capture';
import { runHelper } from './lib/child.ts';
import { heapHolderTarget, withTarget } from './lib/targets.ts';
import { withScratchDir } from './lib/tmp.ts';
import { Checks, mb, printTable, ratio, type Check } from './lib/report.ts';

const HEAP_MB = Number(process.env.BENCH_SUSPECTS_HEAP_MB ?? 300);
const CHILD_TIMEOUT_MS = 30 * 60_000;

interface ChildResult {
  mode: string;
  wallMs: number;
  cpuMainMs: number;
  cpuAllMs: number;
  startRssKb: number;
  peakRssKb: number;
  bytes?: number;
  nodeCount?: number;
  edgeCount?: number;
  groups?: number;
  suspects?: number;
  first?: string | null;
}

/** One capture of `inspect` into `path` by the engine; resolves with the snapshot's bytes. */
async function capture(inspect: string, path: string): Promise<number> {
  await captureHeapSnapshot({ endpoint: { kind: 'node', inspect } }, async (snapshot) => pipeline(snapshot, createWriteStream(path)));
  return (await stat(path)).size;
}

const cpuS = (r: ChildResult): string => (r.cpuAllMs / 1000).toFixed(1);
const peakMb = (r: ChildResult): string => mb(r.peakRssKb * 1024);

/** Runs the suspects bench; returns its checks. */
export async function suspectsBench(): Promise<Check[]> {
  const checks = new Checks('suspects');
  console.log(`load average at start: ${loadavg().map((l) => l.toFixed(1)).join(' ')} (2 cores)`);
  return withScratchDir('suspects', async (dir) => {
    const base = join(dir, 'base.heapsnapshot');
    const head = join(dir, 'head.heapsnapshot');
    for (const [file, heapMb] of [
      [base, HEAP_MB - 20],
      [head, HEAP_MB],
    ] as const) {
      console.log(`target: Node heap holder with HEAP_MB=${heapMb} (building it takes a while)`);
      const bytes = await withTarget(heapHolderTarget('system', heapMb), async ({ inspect }) => capture(inspect, file));
      console.log(`  captured ${mb(bytes)} MB`);
    }
    const child = (...args: string[]): Promise<ChildResult> => runHelper<ChildResult>('./suspects-child.ts', args, CHILD_TIMEOUT_MS);
    const plain = await child('plain', head);
    const analysis = await child('analysis', head);
    const pair = await child('pair', base, head);
    const summaryOnly = await child('summary', base, head);
    // BENCH_SUSPECTS_COMPARE=DIR: the same pair through another checkout's code (an older commit's), alternated with
    // this one's twice more, so a change's cost is a ratio measured on one machine state.
    const compare = process.env.BENCH_SUSPECTS_COMPARE;
    const pairs: { this: ChildResult[]; other: ChildResult[] } = { this: [pair], other: [] };
    if (compare !== undefined) {
      for (let i = 0; i < 2; i++) {
        pairs.other.push(await runHelper<ChildResult>('./suspects-child.ts', ['pair', base, head], CHILD_TIMEOUT_MS, compare));
        pairs.this.push(await child('pair', base, head));
      }
    }

    console.log('');
    printTable(
      ['measurement (own process)', 'snapshot MB', 'wall s', 'CPU-s (all threads)', 'peak RSS MB'],
      [
        ['analysis of head, no suspects (baseline)', mb(plain.bytes), (plain.wallMs / 1000).toFixed(1), cpuS(plain), peakMb(plain)],
        ['analysis of head, with suspect groups', mb(analysis.bytes), (analysis.wallMs / 1000).toFixed(1), cpuS(analysis), peakMb(analysis)],
        ['pair: 2 summaries + 2 analyses + diff', mb(pair.bytes), (pair.wallMs / 1000).toFixed(1), cpuS(pair), peakMb(pair)],
        ['pair, summary-only suspects', '-', (summaryOnly.wallMs / 1000).toFixed(1), cpuS(summaryOnly), peakMb(summaryOnly)],
      ],
    );
    const cpuRatio = analysis.cpuAllMs / plain.cpuAllMs;
    const rssRatio = analysis.peakRssKb / plain.peakRssKb;
    console.log('');
    console.log(`head: ${(plain.nodeCount ?? 0).toLocaleString('en-US')} nodes, ${(plain.edgeCount ?? 0).toLocaleString('en-US')} edges; ${analysis.groups ?? 0} suspect groups`);
    console.log(`suspect groups: +${((analysis.cpuAllMs - plain.cpuAllMs) / 1000).toFixed(1)} CPU-s (${ratio(cpuRatio)}), peak RSS ${ratio(rssRatio)} of the plain analysis`);
    console.log(`pair: ${pair.mode} suspects; #1: ${pair.first ?? '-'}`);
    console.log(`summary-only: #1: ${summaryOnly.first ?? '-'}`);
    if (compare !== undefined) {
      const best = (rs: ChildResult[]): ChildResult => rs.reduce((a, b) => (b.cpuAllMs < a.cpuAllMs ? b : a));
      const [mine, theirs] = [best(pairs.this), best(pairs.other)];
      console.log(`pair CPU-s, this checkout: ${pairs.this.map(cpuS).join(', ')}; ${compare}: ${pairs.other.map(cpuS).join(', ')}`);
      console.log(`pair wall s, this checkout: ${pairs.this.map((r) => (r.wallMs / 1000).toFixed(1)).join(', ')}; ${compare}: ${pairs.other.map((r) => (r.wallMs / 1000).toFixed(1)).join(', ')}`);
      console.log(`pair, best of each: ${cpuS(mine)} vs ${cpuS(theirs)} CPU-s (${ratio(mine.cpuAllMs / theirs.cpuAllMs)}), peak RSS ${peakMb(mine)} vs ${peakMb(theirs)} MB; #1 there: ${theirs.first ?? '-'}`);
      checks.expect(mine.cpuAllMs / theirs.cpuAllMs < 1.1, `the pair costs < 1.1x the CPU of ${compare}'s`, `${cpuS(mine)} vs ${cpuS(theirs)} CPU-s`);
    }
    console.log(`load average at end: ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
    console.log('');
    checks.expect(cpuRatio < 1.5, 'the suspect grouping adds < 50% CPU to the analysis', `${cpuS(analysis)} vs ${cpuS(plain)} CPU-s: ${ratio(cpuRatio)}`);
    checks.expect(rssRatio < 1.15, 'the suspect grouping adds < 15% peak RSS to the analysis', `${peakMb(analysis)} vs ${peakMb(plain)} MB: ${ratio(rssRatio)}`);
    checks.expect(pair.mode === 'graph' && /Order/.test(pair.first ?? ''), "the pair's first suspect is the grown Order class, with holders", pair.first ?? '-');
    return checks.list;
  });
}
