/**
 * Target-safety bench: the warm step must leave nothing behind that slows the
 * target. A Node 20 heap holder with the CPU-loop command (`CPU_LOOP=1`,
 * stdin `spin N`) runs a fixed allocation-free loop many times before a warmed
 * capture and back to back for the ten seconds after it; the median speed
 * after must be within 5% of the median before. Done for both warm methods on
 * fresh targets, plus an unwarmed capture as the control (what the snapshot
 * alone leaves behind).
 *
 * Loop speed is the loop's CPU time, read from schedstat (ns) of the target's
 * main thread and of all its threads: the 2-core machine is shared with other
 * runs, which moves wall-clock timings by up to 2x, while CPU time only moves
 * if the loop itself got slower (or, for all threads, if something was left
 * running beside it, like a profiler's sampling thread). Wall-clock medians
 * are printed beside them.
 *
 * The warm step's cost to the target is measured separately, on the fresh
 * target before the capture: its main-thread CPU (schedstat) and the longest
 * event-loop gap seen by a 1 ms interval inside the target (lib/loop-block.ts),
 * next to the same probe over an idle 300 ms (the machine's noise floor).
 *
 * Run: node --import tsx bench/run.ts safety
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { runWarm, type WarmMethod } from '@heapcap/capture';
import { captureToFile } from './lib/capture-file.ts';
import { heapHolderTarget, withTarget, type BenchTarget } from './lib/targets.ts';
import { cpuDeltaMs, sampleCpu } from './lib/thread-cpu.ts';
import { measureLoopBlock } from './lib/loop-block.ts';
import { withScratchDir } from './lib/tmp.ts';
import { Checks, median, mb, ms, printTable, type Check } from './lib/report.ts';

const HEAP_MB = 50;
/** One `spin` request should take about this much CPU: long enough for timer noise, short enough for ~40 samples in 10 s. */
const SPIN_TARGET_MS = 200;
const WARMUP_SPINS = 5;
const BEFORE_SPINS = 15;
const AFTER_WINDOW_MS = 10_000;
const TOLERANCE = 0.05;

interface Spin {
  wallMs: number;
  mainMs: number;
  allMs: number;
}

interface Speed {
  wall: number;
  main: number;
  all: number;
  n: number;
}

interface Outcome {
  label: string;
  method: WarmMethod | undefined;
  before: Speed;
  after: Speed;
  idleBlockMs: number;
  warmBlockMs: number | undefined;
  /** Main-thread CPU the target spent on the warm step. */
  warmCpuMs: number | undefined;
  captureWarmMs: number | undefined;
  totalMs: number;
  snapshotBytes: number;
}

async function spin(t: BenchTarget, units: number): Promise<Spin> {
  const pid = t.target.pid;
  const c0 = sampleCpu(pid);
  const reply = await t.target.request(`spin ${units}`, 'SPIN ', 60_000);
  const d = cpuDeltaMs(c0, sampleCpu(pid));
  return { wallMs: Number(reply.slice(5)), mainMs: d.mainMs, allMs: d.allMs };
}

function speed(spins: Spin[]): Speed {
  return { wall: median(spins.map((s) => s.wallMs)), main: median(spins.map((s) => s.mainMs)), all: median(spins.map((s) => s.allMs)), n: spins.length };
}

/** Units per `spin` so one request costs ~SPIN_TARGET_MS of CPU (after JIT warm-up). */
async function calibrate(t: BenchTarget): Promise<number> {
  for (let i = 0; i < 3; i++) await spin(t, 5);
  const one = median([await spin(t, 5), await spin(t, 5), await spin(t, 5)].map((s) => s.mainMs)) / 5;
  return Math.max(1, Math.round(SPIN_TARGET_MS / one));
}

async function measure(t: BenchTarget, n: number, label: string, method: WarmMethod | undefined, dir: string): Promise<Outcome> {
  for (let i = 0; i < WARMUP_SPINS; i++) await spin(t, n);
  const before: Spin[] = [];
  for (let i = 0; i < BEFORE_SPINS; i++) before.push(await spin(t, n));

  const idleBlockMs = await measureLoopBlock(t.inspect, () => sleep(300));
  let warmCpuMs: number | undefined;
  const warmBlockMs =
    method === undefined
      ? undefined
      : await measureLoopBlock(t.inspect, async (s) => {
          const c0 = sampleCpu(t.target.pid);
          await runWarm(s, method);
          warmCpuMs = cpuDeltaMs(c0, sampleCpu(t.target.pid)).mainMs;
        });

  const file = join(dir, `${label.replace(/\W+/g, '-')}.heapsnapshot`);
  let captured;
  try {
    captured = await captureToFile(t.inspect, file, method === undefined ? { warm: 'never' } : { warm: 'always', warmMethod: method });
  } finally {
    await rm(file, { force: true });
  }
  const after: Spin[] = [];
  const end = performance.now() + AFTER_WINDOW_MS;
  while (after.length === 0 || performance.now() < end) after.push(await spin(t, n));

  const outcome: Outcome = {
    label,
    method,
    before: speed(before),
    after: speed(after),
    idleBlockMs,
    warmBlockMs,
    warmCpuMs,
    captureWarmMs: captured.result.warm.durationMs,
    totalMs: captured.result.timings.total,
    snapshotBytes: captured.fileBytes,
  };
  console.log(
    `  ${label}: loop CPU ${outcome.before.main.toFixed(1)} -> ${outcome.after.main.toFixed(1)} ms (main thread), ` +
      `wall ${outcome.before.wall.toFixed(1)} -> ${outcome.after.wall.toFixed(1)} ms, ${after.length} spins after`,
  );
  return outcome;
}

const pct = (r: number): string => `${r >= 1 ? '+' : ''}${((r - 1) * 100).toFixed(1)}%`;

/** Runs the target-safety bench; returns its checks. */
export async function safetyBench(): Promise<Check[]> {
  const checks = new Checks('safety');
  const outcomes: Outcome[] = [];
  await withScratchDir('safety', async (dir) => {
    // Calibrated once, on the first target, so every case runs the same loop.
    let units: number | undefined;
    const cases: Array<[string, WarmMethod | undefined]> = [
      ['warm debugger', 'debugger'],
      ['warm profiler', 'profiler'],
      ['no warm (control)', undefined],
    ];
    for (const [label, method] of cases) {
      // A fresh target per case: each warm method meets a target nothing has warmed yet.
      const outcome = await withTarget(heapHolderTarget('system', HEAP_MB, true), async (t) => {
        units ??= await calibrate(t);
        return measure(t, units, label, method, dir);
      });
      outcomes.push(outcome);
    }
    console.log(`\nloop: ${units} units per spin; medians of ${BEFORE_SPINS} spins before the capture and of every spin in the ${AFTER_WINDOW_MS / 1000} s after it`);
  });

  printTable(
    ['capture', 'snapshot MB', 'total ms', 'capture warm ms (client)', 'first warm: target CPU ms', 'loop block ms', 'idle probe: loop block ms', 'CPU main before', 'after', 'change', 'CPU all threads change', 'wall before', 'after', 'change'],
    outcomes.map((o) => [
      o.label,
      mb(o.snapshotBytes),
      ms(o.totalMs),
      o.captureWarmMs === undefined ? '-' : o.captureWarmMs.toFixed(1),
      o.warmCpuMs === undefined ? '-' : o.warmCpuMs.toFixed(1),
      o.warmBlockMs === undefined ? '-' : o.warmBlockMs.toFixed(1),
      o.idleBlockMs.toFixed(1),
      o.before.main.toFixed(1),
      o.after.main.toFixed(1),
      pct(o.after.main / o.before.main),
      pct(o.after.all / o.before.all),
      o.before.wall.toFixed(1),
      o.after.wall.toFixed(1),
      pct(o.after.wall / o.before.wall),
    ]),
  );
  console.log('');

  for (const o of outcomes) {
    if (o.method === undefined) continue;
    const main = o.after.main / o.before.main;
    const all = o.after.all / o.before.all;
    checks.expect(Math.abs(main - 1) <= TOLERANCE, `${o.label}: loop speed (main-thread CPU) after the capture within 5% of before`, pct(main));
    checks.expect(Math.abs(all - 1) <= TOLERANCE, `${o.label}: loop CPU of all threads after the capture within 5% of before (nothing left running)`, pct(all));
    const wall = o.after.wall / o.before.wall;
    if (Math.abs(wall - 1) > TOLERANCE) console.log(`note: ${o.label}: wall-clock loop time moved ${pct(wall)} (machine load; CPU time decides)`);
  }
  const warmed = outcomes.filter((o) => o.method !== undefined);
  // Target CPU decides (load-independent); the loop block, a wall-clock gap, is printed beside.
  const cheapest = [...warmed].sort((a, b) => (a.warmCpuMs ?? 0) - (b.warmCpuMs ?? 0))[0];
  if (cheapest !== undefined) {
    const each = (f: (o: Outcome) => string): string => warmed.map((o) => `${o.label} ${f(o)}`).join(', ');
    console.log(
      `costs the target least: ${cheapest.label} (warm CPU in the target: ${each((o) => `${o.warmCpuMs?.toFixed(1)} ms`)}; ` +
        `event-loop block: ${each((o) => `${o.warmBlockMs?.toFixed(1)} ms`)}; after-effect: ${each((o) => pct(o.after.main / o.before.main))})`,
    );
  }
  return checks.list;
}
