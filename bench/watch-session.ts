/**
 * Watch sampling: one long-lived CDP session per target, or a new session per
 * sample? Measured on a busy HTTP target (bench/lib/http-target.cjs: 200 order
 * objects built and serialized per request, under autocannon with 8 connections): the target's CPU per
 * request and its p50/p99 latency with no sampler, with a persistent-session
 * sampler and with a connect-per-sample sampler, both sampling every 100 ms
 * (150 times the default rate, so that the cost stands out of the noise).
 * Three rounds, interleaved, medians; the cost per sample is the extra target
 * CPU over the baseline of the same round divided by the samples taken.
 *
 * Run: npm run bench -- watch-session
 */
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { MemorySampler, type SessionMode } from '@heapcap/capture';
import { startNodeTarget, type NodeTarget } from '@heapcap/testkit';
import { cpuDeltaMs, sampleCpu } from './lib/thread-cpu.ts';
import { Checks, median, printTable, type Check } from './lib/report.ts';

const requireHere = createRequire(import.meta.url);
interface AcResult {
  requests: { total: number; average: number };
  latency: { p50: number; p99: number };
}
const autocannon = requireHere('autocannon') as (o: { url: string; connections: number; duration: number }) => Promise<AcResult>;

const ROUNDS = 3;
const DURATION_S = 8;
const SAMPLE_EVERY_MS = 100;


type Mode = 'none' | SessionMode;

interface Run {
  mode: Mode;
  cpuMsPerKReq: number;
  reqPerS: number;
  p50: number;
  p99: number;
  samples: number;
  extraCpuMs: number;
  cpuMs: number;
}

async function measure(target: NodeTarget, port: number, mode: Mode): Promise<Run> {
  let samples = 0;
  let stop = false;
  const sampler = mode === 'none' ? undefined : new MemorySampler({ kind: 'node', ws: target.wsUrl! }, mode, { connectMs: 5_000, commandMs: 5_000 });
  const loop = (async () => {
    while (sampler !== undefined && !stop) {
      const t0 = performance.now();
      await sampler.sample();
      samples++;
      const wait = SAMPLE_EVERY_MS - (performance.now() - t0);
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    }
  })();
  const before = sampleCpu(target.pid);
  const r = await autocannon({ url: `http://127.0.0.1:${port}/`, connections: 8, duration: DURATION_S });
  const cpu = cpuDeltaMs(before, sampleCpu(target.pid)).allMs;
  stop = true;
  await loop;
  await sampler?.close();
  return { mode, cpuMsPerKReq: (cpu / r.requests.total) * 1000, reqPerS: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, samples, extraCpuMs: 0, cpuMs: cpu };
}

export async function watchSessionBench(): Promise<Check[]> {
  const checks = new Checks('watch-session');
  {
    // The sampling bench's busy HTTP target (bench/lib/http-target.cjs).
    const target = await startNodeTarget({ script: fileURLToPath(new URL('./lib/http-target.cjs', import.meta.url)) });
    try {
      const port = Number(/HTTP_PORT (\d+)/.exec(target.stdoutText())![1]);
      await autocannon({ url: `http://127.0.0.1:${port}/`, connections: 8, duration: 2 }); // warm the JIT
      const runs: Run[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        const base = await measure(target, port, 'none');
        runs.push(base);
        for (const mode of ['persistent', 'per-sample'] as const) {
          const r = await measure(target, port, mode);
          // Extra target CPU against this round's baseline, at the same request rate.
          r.extraCpuMs = r.cpuMs - (base.cpuMs / base.reqPerS) * r.reqPerS;
          runs.push(r);
        }
      }
      const of = (mode: Mode): Run[] => runs.filter((r) => r.mode === mode);
      const base = of('none');
      const row = (mode: Mode): string[] => {
        const rs = of(mode);
        const perSample = mode === 'none' ? '-' : (median(rs.map((r) => r.extraCpuMs / Math.max(1, r.samples))) ).toFixed(3);
        return [
          mode,
          median(rs.map((r) => r.cpuMsPerKReq)).toFixed(1),
          (median(rs.map((r) => r.cpuMsPerKReq)) / median(base.map((r) => r.cpuMsPerKReq))).toFixed(3),
          Math.round(median(rs.map((r) => r.reqPerS))).toLocaleString('en-US'),
          median(rs.map((r) => r.p50)).toFixed(1),
          median(rs.map((r) => r.p99)).toFixed(1),
          mode === 'none' ? '-' : String(median(rs.map((r) => r.samples))),
          perSample,
        ];
      };
      console.log(`\nBusy HTTP target (autocannon, 8 connections, ${DURATION_S} s), sampling every ${SAMPLE_EVERY_MS} ms, medians of ${ROUNDS} rounds:\n`);
      printTable(['sampler', 'target CPU ms / 1k req', 'vs none', 'req/s', 'p50 ms', 'p99 ms', 'samples', 'target CPU ms / sample'], (['none', 'persistent', 'per-sample'] as const).map(row));
      const cost = (mode: Mode): number => median(of(mode).map((r) => r.extraCpuMs / Math.max(1, r.samples)));
      checks.expect(cost('persistent') <= cost('per-sample'), 'a persistent session costs the target no more CPU per sample than a new session per sample (the watcher default)', `${cost('persistent').toFixed(3)} vs ${cost('per-sample').toFixed(3)} ms`);
      const p99 = (mode: Mode): number => median(of(mode).map((r) => r.p99));
      checks.expect(p99('persistent') <= p99('per-sample') * 1.1, 'p99 latency with a persistent session within 10 % of (or below) connect-per-sample', `${p99('persistent')} vs ${p99('per-sample')} ms`);
    } finally {
      await target.kill('SIGKILL');
    }
  }
  return checks.list;
}
