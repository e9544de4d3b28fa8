/**
 * One measurement of the suspects bench in a process of its own (so VmHWM is
 * its own):
 *   plain FILE        the analysis without the suspects' grouping (the baseline),
 *   analysis FILE     the analysis as the worker runs it (with the grouping),
 *   pair BASE HEAD    what a diff with suspects costs from the two files: both
 *                     summaries, both analyses (one after the other, as one
 *                     worker runs them), then the diff and its suspects,
 *   summary BASE HEAD the summary-only suspects: both summaries and the diff.
 * Prints one JSON line: wall ms, CPU ms of the main thread (schedstat) and of
 * all threads (getrusage), VmHWM before the work and at the end, and counts.
 *
 * Usage: node --import tsx bench/lib/suspects-child.ts MODE FILE [FILE]
 */
import { analyzeSnapshotFile, diffSummaries, summarizeFile } from '@heapcap/analysis';
import { peakRssKb } from '@heapcap/testkit';
import { cpuDeltaMs, sampleCpu } from './thread-cpu.ts';

const [mode, file, head] = process.argv.slice(2);
if (file === undefined || !['plain', 'analysis', 'pair', 'summary'].includes(mode ?? '') || ((mode === 'pair' || mode === 'summary') && head === undefined)) {
  throw new Error('usage: suspects-child.ts plain|analysis FILE | pair|summary BASE HEAD');
}
const MAX_BYTES = 4e9;

const startRssKb = peakRssKb(process.pid);
const cpu0 = sampleCpu(process.pid);
const usage0 = process.cpuUsage();
const t0 = performance.now();
let extra: Record<string, unknown> = {};
if (mode === 'plain' || mode === 'analysis') {
  const a = await analyzeSnapshotFile(file, { maxBytes: MAX_BYTES, groups: mode === 'analysis' });
  extra = { bytes: a.snapshotBytes, nodeCount: a.nodeCount, edgeCount: a.edgeCount, groups: a.groups?.length ?? 0 };
} else if (mode === 'pair') {
  const [bs, hs] = [await summarizeFile(file), await summarizeFile(head as string)];
  const baseAnalysis = await analyzeSnapshotFile(file, { maxBytes: MAX_BYTES });
  const headAnalysis = await analyzeSnapshotFile(head as string, { maxBytes: MAX_BYTES });
  const d = diffSummaries(bs, hs, { baseAnalysis, headAnalysis });
  extra = { bytes: baseAnalysis.snapshotBytes + headAnalysis.snapshotBytes, mode: d.suspects.mode, suspects: d.suspects.suspects.length, first: d.suspects.suspects[0]?.reason ?? null };
} else {
  const d = diffSummaries(await summarizeFile(file), await summarizeFile(head as string));
  extra = { mode: d.suspects.mode, suspects: d.suspects.suspects.length, first: d.suspects.suspects[0]?.reason ?? null };
}
const wallMs = performance.now() - t0;
const cpu = cpuDeltaMs(cpu0, sampleCpu(process.pid));
const usage = process.cpuUsage(usage0);
console.log(JSON.stringify({ mode, wallMs, cpuMainMs: cpu.mainMs, cpuAllMs: (usage.user + usage.system) / 1000, startRssKb, peakRssKb: peakRssKb(process.pid), ...extra }));
