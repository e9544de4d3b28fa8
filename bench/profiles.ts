/**
 * What allocation profiles cost, for continuous profiles (issue 38):
 *
 *   node --import tsx bench/profiles.ts      (or: npm run bench -- profiles)
 *
 * 1. Continuous sampling on vs off: the sampling bench's busy HTTP target
 *    (lib/http-target.cjs) under autocannon; each round a window with no
 *    sampler and a window with a held sampling session (startSampling at the
 *    interval, getSamplingProfile every 2 s, as a continuous profile reads
 *    it), in alternating order. The target's main-thread CPU per request is
 *    the measure (requests/s swing ±40% on this shared host, reported only).
 * 2. One getSamplingProfile on a small and a large heap: the alloc-sites
 *    target keeps 20,000 or 1,200,000 Session objects (~650 MB RSS)
 *    allocated while sampling at 32 KiB (so the profile holds them); the
 *    round trip and the target's CPU during it, main thread (the inspector
 *    answers there: the target's pause) and all threads.
 * 3. The capturer's side: summarizeProfile and profileToPprof of that
 *    profile, CPU ms in this process.
 */
import { cpus, loadavg } from 'node:os';
import { profileToPprof, summarizeProfile } from '@heapcap/analysis';
import { fixturePath, rssKb, startNodeTarget, startSamplingSession, type NodeTarget } from '@heapcap/testkit';
import { alternatingRounds, withHttpTarget, type Autocannon } from './lib/on-off.ts';
import { Checks, median, printTable, ratio, type Check } from './lib/report.ts';
import { cpuDeltaMs, sampleCpu } from './lib/thread-cpu.ts';


const ROUNDS = Number(process.env['BENCH_PROFILES_ROUNDS'] ?? 3);
const WINDOW_S = Number(process.env['BENCH_PROFILES_SECONDS'] ?? 6);
const INTERVALS = [32_768, 524_288];
const CONNECTIONS = 16;
/** Live Session objects for the large heap (~420 bytes each with their string and array). */
const LARGE_SESSIONS = Number(process.env['BENCH_PROFILES_SESSIONS'] ?? 1_200_000);

interface Window {
  rps: number;
  cpuUsPerRequest: number;
  errors: number;
  reads: number;
}

/** A load window; with `intervalBytes`, a sampling session held over it and read every 2 s. */
async function loadWindow(target: NodeTarget, url: string, autocannon: Autocannon, intervalBytes: number | undefined): Promise<Window> {
  const session = intervalBytes === undefined ? undefined : await startSamplingSession(target.wsUrl!, intervalBytes);
  let reads = 0;
  const reader = session === undefined ? undefined : setInterval(() => void session.profile().then(() => (reads += 1)), 2000);
  try {
    const cpu0 = sampleCpu(target.pid);
    const r = await autocannon({ url, connections: CONNECTIONS, duration: WINDOW_S });
    const cpu = cpuDeltaMs(cpu0, sampleCpu(target.pid));
    return { rps: r.requests.average, cpuUsPerRequest: (cpu.mainMs * 1000) / Math.max(1, r.requests.total), errors: r.errors + r.non2xx, reads };
  } finally {
    clearInterval(reader);
    await session?.close();
  }
}

/** Part 1: CPU per request with continuous sampling on vs off, per interval. */
async function continuous(checks: Checks): Promise<void> {
  await withHttpTarget(async (target, url, autocannon) => {
    await autocannon({ url, connections: CONNECTIONS, duration: 2 });
    for (const interval of INTERVALS) {
      const rows = await alternatingRounds(ROUNDS, () => loadWindow(target, url, autocannon, undefined), () => loadWindow(target, url, autocannon, interval));
      console.log(`\ncontinuous sampling at ${interval / 1024} KiB, read every 2 s (${WINDOW_S} s windows, ${CONNECTIONS} connections, load average ${loadavg()[0]?.toFixed(1)} on ${cpus().length} CPUs):\n`);
      printTable(
        ['round', 'req/s off', 'req/s on', 'ratio', 'CPU µs/req off', 'CPU µs/req on', 'ratio', 'reads'],
        rows.map((r, i) => [String(i + 1), r.off.rps.toFixed(0), r.on.rps.toFixed(0), ratio(r.on.rps / r.off.rps), r.off.cpuUsPerRequest.toFixed(1), r.on.cpuUsPerRequest.toFixed(1), ratio(r.on.cpuUsPerRequest / r.off.cpuUsPerRequest), String(r.on.reads)]),
      );
      const cpuRatio = median(rows.map((r) => r.on.cpuUsPerRequest / r.off.cpuUsPerRequest));
      console.log(`\nmedian CPU per request on/off at ${interval / 1024} KiB: ${ratio(cpuRatio)}; req/s ${ratio(median(rows.map((r) => r.on.rps / r.off.rps)))}`);
      checks.expect(rows.every((r) => r.off.errors === 0 && r.on.errors === 0), `every request answered 2xx (${interval / 1024} KiB)`, rows.map((r) => `${r.off.errors}/${r.on.errors}`).join(', '));
      checks.expect(rows.every((r) => r.on.reads > 0), `the profile was read during every sampled window (${interval / 1024} KiB)`, rows.map((r) => r.on.reads).join(', '));
      goal(cpuRatio <= 1.02, `continuous sampling at ${interval / 1024} KiB costs at most 1.02x main-thread CPU per request (median)`, ratio(cpuRatio));
    }
  });
}

/** The goals are reported beside the checks: this shared host cannot always resolve them. */
function goal(met: boolean, what: string, detail: string): void {
  console.log(`GOAL ${met ? 'met' : 'NOT met'}: ${what} (${detail})`);
}

/** getSamplingProfile three times on a target keeping `sessions` Sessions allocated while sampling; per read: round trip, the target's CPU. */
async function reads(sessions: number): Promise<{ rows: string[][]; mainMs: number[]; rssMb: number; profile: unknown }> {
  const target = await startNodeTarget({ script: fixturePath('alloc-sites.cjs'), nodeFlags: ['--max-old-space-size=4096'] });
  try {
    const session = await startSamplingSession(target.wsUrl!, 32_768, 120_000);
    try {
      await target.request(`leak ${sessions}`, 'LEAKED', 600_000);
      const rssMb = rssKb(target.pid) / 1024;
      const rows: string[][] = [];
      const mainMs: number[] = [];
      let profile: unknown;
      for (let i = 0; i < 3; i++) {
        const cpu0 = sampleCpu(target.pid);
        const t0 = process.hrtime.bigint();
        profile = await session.profile();
        const roundTripMs = Number(process.hrtime.bigint() - t0) / 1e6;
        const cpu = cpuDeltaMs(cpu0, sampleCpu(target.pid));
        mainMs.push(cpu.mainMs);
        rows.push([sessions.toLocaleString('en'), rssMb.toFixed(0), String(i + 1), roundTripMs.toFixed(1), cpu.mainMs.toFixed(1), cpu.allMs.toFixed(1), cpu.waitMs.toFixed(1), (JSON.stringify(profile).length / 1e6).toFixed(2)]);
      }
      return { rows, mainMs, rssMb, profile };
    } finally {
      await session.close();
    }
  } finally {
    await target.kill();
  }
}

/** Parts 2 and 3: one getSamplingProfile on a small and on a large heap, and what the capturer spends on the large one's profile. */
async function largeHeap(checks: Checks): Promise<void> {
  const small = await reads(20_000);
  const large = await reads(LARGE_SESSIONS);
  console.log('\none getSamplingProfile (32 KiB interval; the Sessions were allocated while sampling):\n');
  printTable(['live Sessions', 'RSS MB', 'read', 'round trip ms', 'target main-thread CPU ms', 'all threads CPU ms', 'main thread waiting for a CPU ms', 'profile MB (JSON)'], [...small.rows, ...large.rows]);
  const u0 = process.cpuUsage();
  const summary = summarizeProfile(large.profile, { samplingIntervalBytes: 32_768 });
  const u1 = process.cpuUsage(u0);
  const pprof = profileToPprof(large.profile, { samplingIntervalBytes: 32_768 });
  const u2 = process.cpuUsage(u0);
  const summaryMs = (u1.user + u1.system) / 1000;
  const pprofMs = (u2.user + u2.system) / 1000 - summaryMs;
  console.log(`
capturer: summarizeProfile ${summaryMs.toFixed(1)} CPU ms (${summary.samples} samples, ${summary.nodes} nodes, top site ${summary.sites[0]?.functionName ?? '-'}), profileToPprof ${pprofMs.toFixed(1)} CPU ms (${(pprof.length / 1000).toFixed(1)} KB gzipped)\n`);
  checks.expect(large.rssMb > 400, 'the large heap is large (RSS over 400 MB)', `${large.rssMb.toFixed(0)} MB`);
  checks.expect(summary.samples > 0 && summary.sites[0] !== undefined, "the large heap's profile has samples and a top site", `${summary.samples} samples`);
  goal(median(large.mainMs) < 50, 'one getSamplingProfile on the large heap costs the target under 50 ms of main-thread CPU (median)', `${median(large.mainMs).toFixed(1)} ms; ${median(small.mainMs).toFixed(1)} ms on the small heap`);
}

/** The bench: continuous on vs off, then the large heap. */
export async function profilesBench(): Promise<Check[]> {
  const checks = new Checks('profiles');
  await largeHeap(checks);
  await continuous(checks);
  return checks.list;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const failed = (await profilesBench()).filter((c) => !c.ok);
  process.exit(failed.length > 0 ? 1 : 0);
}
