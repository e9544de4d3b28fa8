/**
 * What a hunt's allocation tracking costs (issue 38, item 1):
 *
 *   node --import tsx bench/hunt-tracking.ts      (or: npm run bench -- hunt-tracking)
 *   short (smoke) run: BENCH_HUNT_TRACKING_ROUNDS=1 BENCH_HUNT_TRACKING_SECONDS=2
 *
 * 1. The hunt's window with tracking on vs off, side by side: the profiles
 *    bench's busy HTTP target (lib/http-target.cjs) under autocannon; each
 *    round a window with a hunt's session held (HeapProfiler enabled, as a
 *    hunt's is) and a window with that session tracking allocations
 *    (startTrackingHeapObjects({trackAllocations: true}), stopped with
 *    HeapProfiler.disable after it, no snapshot), in alternating order.
 *    Reported: requests/s and the target's main-thread CPU per request, and
 *    their ratios on/off.
 * 2. The capturer's side: one snapshot of a target whose 200,000 Sessions
 *    were allocated while tracking (the one stopTrackingHeapObjects streams,
 *    as a hunt's target snapshot), read for its ids with and without the
 *    trace sections (what the hunt's report adds), and summarized (what a
 *    capture does), beside a snapshot of the same heap without tracking:
 *    CPU ms in this process and the bytes the trace sections add.
 */
import { createWriteStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { readNodeIds, summarizeFile } from '@heapcap/analysis';
import { CdpSession, takeSnapshot } from '@heapcap/capture';
import { fixturePath, startNodeTarget, tmpDir, type NodeTarget } from '@heapcap/testkit';
import { Checks, median, printTable, ratio, type Check } from './lib/report.ts';
import { cpuDeltaMs, sampleCpu } from './lib/thread-cpu.ts';
import { alternate, autocannon as loadAutocannon, startHttpTarget, type Autocannon } from './lib/http-load.ts';

const ROUNDS = Number(process.env['BENCH_HUNT_TRACKING_ROUNDS'] ?? 3);
const WINDOW_S = Number(process.env['BENCH_HUNT_TRACKING_SECONDS'] ?? 6);
const SESSIONS = Number(process.env['BENCH_HUNT_TRACKING_SESSIONS'] ?? 200_000);
const CONNECTIONS = 16;

interface Window {
  rps: number;
  cpuUsPerRequest: number;
  errors: number;
}

/**
 * A load window with a hunt's session held on the target; `track`: tracking over it, with allocation stacks
 * (`stacks`, a hunt's) or without (`timer`: only what tracking adds besides the stacks, V8's 50 ms heap-stats timer).
 */
async function loadWindow(target: NodeTarget, url: string, autocannon: Autocannon, track: false | 'stacks' | 'timer'): Promise<Window> {
  const session = await CdpSession.connect(target.wsUrl ?? '', { connectTimeoutMs: 10_000, commandTimeoutMs: 60_000 });
  try {
    await session.send('HeapProfiler.enable');
    if (track !== false) await session.send('HeapProfiler.startTrackingHeapObjects', { trackAllocations: track === 'stacks' });
    const cpu0 = sampleCpu(target.pid);
    const r = await autocannon({ url, connections: CONNECTIONS, duration: WINDOW_S });
    const cpu = cpuDeltaMs(cpu0, sampleCpu(target.pid));
    return { rps: r.requests.average, cpuUsPerRequest: (cpu.mainMs * 1000) / Math.max(1, r.requests.total), errors: r.errors + r.non2xx };
  } finally {
    // Disable stops the tracker without streaming a snapshot (stopTrackingHeapObjects would stream one).
    await session.send('HeapProfiler.disable').catch(() => undefined);
    await session.close();
  }
}

/** Part 1: the hunt's window, tracking on vs off. */
async function window(checks: Checks): Promise<void> {
  const autocannon = loadAutocannon();
  const { target, url } = await startHttpTarget();
  try {
    await autocannon({ url, connections: CONNECTIONS, duration: 2 });
    const rows = await alternate(
      ROUNDS,
      () => loadWindow(target, url, autocannon, false),
      () => loadWindow(target, url, autocannon, 'stacks'),
    );
    // What the timer alone costs (tracking without stacks), against an off window of its own.
    const timer = await alternate(
      ROUNDS,
      () => loadWindow(target, url, autocannon, false),
      () => loadWindow(target, url, autocannon, 'timer'),
    );
    console.log(`\na hunt's window, allocation tracking off vs on (${WINDOW_S} s windows, ${CONNECTIONS} connections, load average ${loadavg()[0]?.toFixed(1)} on ${cpus().length} CPUs):\n`);
    printTable(
      ['round', 'req/s off', 'req/s on', 'ratio', 'CPU µs/req off', 'CPU µs/req on', 'ratio'],
      rows.map((r, i) => [String(i + 1), r.off.rps.toFixed(0), r.on.rps.toFixed(0), ratio(r.on.rps / r.off.rps), r.off.cpuUsPerRequest.toFixed(1), r.on.cpuUsPerRequest.toFixed(1), ratio(r.on.cpuUsPerRequest / r.off.cpuUsPerRequest)]),
    );
    const rps = median(rows.map((r) => r.on.rps / r.off.rps));
    const cpu = median(rows.map((r) => r.on.cpuUsPerRequest / r.off.cpuUsPerRequest));
    console.log(`\nmedian with tracking on/off: requests/s ${ratio(rps)}, main-thread CPU per request ${ratio(cpu)}`);
    const timerRps = median(timer.map((r) => r.on.rps / r.off.rps));
    const timerCpu = median(timer.map((r) => r.on.cpuUsPerRequest / r.off.cpuUsPerRequest));
    console.log(`tracking without stacks (trackAllocations: false: the 50 ms heap-stats timer and its GCs) on/off: requests/s ${ratio(timerRps)}, main-thread CPU per request ${ratio(timerCpu)}`);
    checks.expect(rows.every((r) => r.off.errors === 0 && r.on.errors === 0), 'every request answered 2xx', rows.map((r) => `${r.off.errors}/${r.on.errors}`).join(', '));
    checks.expect(rows.every((r) => r.on.rps > 0 && r.off.rps > 0), 'the target served requests in every window', rows.map((r) => `${r.off.rps.toFixed(0)}/${r.on.rps.toFixed(0)}`).join(', '));
  } finally {
    await target.kill();
  }
}

/** One snapshot of `session` into `path`; with `stopTracking`, the one stopTrackingHeapObjects streams. */
async function snapshot(session: CdpSession, path: string, stopTracking: boolean): Promise<number> {
  await takeSnapshot(session, (s) => pipeline(s, createWriteStream(path)), { stopTracking });
  return (await stat(path)).size;
}

/** CPU ms of this process over `fn`. */
async function cpuMs<T>(fn: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const u0 = process.cpuUsage();
  const value = await fn();
  const u = process.cpuUsage(u0);
  return { ms: (u.user + u.system) / 1000, value };
}

/** Part 2: what the capturer spends on a snapshot with trace sections. */
async function capturer(checks: Checks): Promise<void> {
  const dir = await tmpDir('heapcap-bench-tracking');
  const target = await startNodeTarget({ script: fixturePath('alloc-sites.cjs') });
  try {
    const session = await CdpSession.connect(target.wsUrl ?? '', { connectTimeoutMs: 10_000, commandTimeoutMs: 600_000 });
    const plain = join(dir.path, 'plain.heapsnapshot');
    const traced = join(dir.path, 'traced.heapsnapshot');
    try {
      await session.send('HeapProfiler.enable');
      await session.send('HeapProfiler.startTrackingHeapObjects', { trackAllocations: true });
      await target.request(`leak ${SESSIONS}`, 'LEAKED', 600_000);
      const tracedBytes = await snapshot(session, traced, true);
      const plainBytes = await snapshot(session, plain, false);
      const rows: string[][] = [];
      const idsPlain = await cpuMs(() => readNodeIds(traced, 4e9));
      const idsTrace = await cpuMs(() => readNodeIds(traced, 4e9, { trace: true }));
      const sumPlain = await cpuMs(() => summarizeFile(plain));
      const sumTraced = await cpuMs(() => summarizeFile(traced));
      rows.push(['node ids (the hunt\'s read of its target snapshot)', idsPlain.ms.toFixed(0), idsTrace.ms.toFixed(0), ratio(idsTrace.ms / idsPlain.ms)]);
      rows.push(['summary (a capture\'s), plain vs traced snapshot of the same heap', sumPlain.ms.toFixed(0), sumTraced.ms.toFixed(0), ratio(sumTraced.ms / sumPlain.ms)]);
      console.log(`\nthe capturer, ${SESSIONS.toLocaleString('en')} Sessions allocated while tracking: traced snapshot ${(tracedBytes / 1e6).toFixed(1)} MB, plain ${(plainBytes / 1e6).toFixed(1)} MB (the trace sections and trace ids add ${((tracedBytes - plainBytes) / 1e6).toFixed(1)} MB); ${idsTrace.value.trace?.tracedNodes ?? 0} traced nodes, ${idsTrace.value.trace?.functions ?? 0} functions\n`);
      printTable(['CPU ms in this process', 'without trace', 'with trace', 'ratio'], rows);
      checks.expect(idsTrace.value.trace !== undefined && idsTrace.value.trace.tracedNodes >= SESSIONS, 'the traced snapshot carries a trace node for every Session', String(idsTrace.value.trace?.tracedNodes));
      checks.expect(idsPlain.value.trace === undefined, 'without `trace` the ids read skips the trace', '');
    } finally {
      await session.close();
    }
  } finally {
    await target.kill();
    await dir.cleanup();
  }
}

/** The bench: the hunt's window, then the capturer. */
export async function huntTrackingBench(): Promise<Check[]> {
  const checks = new Checks('hunt-tracking');
  await capturer(checks);
  await window(checks);
  return checks.list;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const failed = (await huntTrackingBench()).filter((c) => !c.ok);
  process.exit(failed.length > 0 ? 1 : 0);
}
