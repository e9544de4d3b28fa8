/**
 * A pipe capture on a busy host: does heapcap's priority setting hold the
 * target back when both have to share the cores with other work? With every
 * heapcap thread at nice 10, the FIFO's reading thread and the main thread
 * that takes its blocks could fall behind the busy neighbours and leave the
 * target waiting in write() on its full FIFO. A Node 22 heap holder
 * (BENCH_LOADED_HEAP_MB=100: a ~175 MB snapshot), BENCH_LOADED_HOGS busy loops
 * at nice 0 beside it (default: one per core), then BENCH_LOADED_REPS=3
 * repetitions, rotated, of:
 * - in-process: the target's own writeHeapSnapshot() to its disk;
 * - default: bin/heapcap capture into a directory with its defaults (the
 *   pipe, every thread at HEAPCAP_NICE=10);
 * - nice0: the same with HEAPCAP_NICE=0;
 * - old: another build's bin/heapcap with its defaults, when BENCH_OLD_HEAPCAP
 *   names one (how to build one: the header of bench/cli-cpu.ts).
 * The target's pause is measured from inside it (lib/pause-probe.ts): heapcap's
 * own phase clock is no measure here, since its starved main thread notes the
 * last chunk late.
 *
 * Check (medians, within the run): the default's pause ≤ 1.10× the pause at
 * nice 0, i.e. the priority setting costs a target on a busy host nothing.
 * Printed beside it: both against the target's own writeHeapSnapshot().
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { cliCapture, ensureCliBuilt } from './lib/cli-capture.ts';
import { withPauseProbe, type Pause } from './lib/pause-probe.ts';
import { Checks, median, ms, printTable, ratio, type Check } from './lib/report.ts';
import { onProcessExit } from '@heapcap/testkit';
import { heapHolderTarget, withTarget } from './lib/targets.ts';
import { withScratchDir } from './lib/tmp.ts';

const HEAP_MB = Number(process.env.BENCH_LOADED_HEAP_MB ?? 100);
const HOGS = Number(process.env.BENCH_LOADED_HOGS ?? cpus().length);
const REPS = Math.max(1, Number(process.env.BENCH_LOADED_REPS ?? 3));
const RUN_TIMEOUT_MS = 15 * 60_000;
const GOAL = 1.1;
const OLD = process.env.BENCH_OLD_HEAPCAP;

type Mode = 'in-process' | 'default' | 'nice0' | 'old';

interface Run {
  mode: Mode;
  pause: Pause;
  spilledMb?: number;
}

/** Runs the loaded bench; returns its checks. */
export async function loadedBench(): Promise<Check[]> {
  const checks = new Checks('loaded');
  await ensureCliBuilt();
  const runs: Run[] = [];
  await withScratchDir('loaded', async (dir) => {
    await withTarget(heapHolderTarget('22', HEAP_MB), async ({ target, inspect }) => {
      await target.request(`writeHeapSnapshot ${join(dir, 'warm.heapsnapshot')}`, 'WROTE ', RUN_TIMEOUT_MS);
      await rm(join(dir, 'warm.heapsnapshot'), { force: true });
      console.log(`Node 22 heap holder, HEAP_MB=${HEAP_MB}; ${HOGS} busy loops at nice 0 beside it; ${REPS} repetitions`);
      const hogs: ChildProcess[] = Array.from({ length: HOGS }, () => spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }));
      // Killed with the bench, however it ends (Ctrl-C included): busy loops left behind skew whatever runs next.
      const unregister = onProcessExit(() => {
        for (const h of hogs) h.kill('SIGKILL');
      });
      try {
        const modes: Mode[] = ['in-process', 'default', 'nice0', ...(OLD === undefined ? [] : (['old'] as const))];
        for (let rep = 0; rep < REPS; rep++) {
          for (const mode of modes.map((_, i) => modes[(i + rep) % modes.length] as Mode)) {
            const out = join(dir, `${mode}-${rep}`);
            let run: Run;
            if (mode === 'in-process') {
              const { pause } = await withPauseProbe(target, () => target.request(`writeHeapSnapshot ${out}.heapsnapshot`, 'WROTE ', RUN_TIMEOUT_MS));
              run = { mode, pause };
            } else {
              const env: NodeJS.ProcessEnv = { ...process.env };
              if (mode === 'nice0') env.HEAPCAP_NICE = '0';
              else delete env.HEAPCAP_NICE;
              const { result, pause } = await withPauseProbe(target, () => cliCapture(['--node', inspect], out, [], RUN_TIMEOUT_MS, env, mode === 'old' ? OLD : undefined));
              run = { mode, pause, spilledMb: result.spilledBytes / 1e6 };
            }
            await rm(out, { recursive: true, force: true });
            await rm(`${out}.heapsnapshot`, { force: true });
            runs.push(run);
            console.log(
              `  rep ${rep} ${mode.padEnd(10)} pause ${ms(run.pause.ms)} ms (target main thread: CPU ${ms(run.pause.mainCpuMs)}, waiting for a CPU ${ms(run.pause.mainWaitMs)})` +
                `${run.spilledMb === undefined ? '' : `; spilled ${run.spilledMb.toFixed(0)} MB`}; load ${loadavg()[0]?.toFixed(1)}`,
            );
          }
        }
      } finally {
        for (const h of hogs) h.kill('SIGKILL');
        unregister();
      }
    });
  });
  const med = (mode: Mode, pick: (r: Run) => number): number => median(runs.filter((r) => r.mode === mode).map(pick));
  const base = med('in-process', (r) => r.pause.ms);
  printTable(
    ['mode', 'pauses ms', 'median pause ms', 'vs in-process', 'target CPU / wait ms (medians)'],
    (['in-process', 'default', 'nice0', ...(OLD === undefined ? [] : ['old'])] as Mode[]).map((m) => [
      m,
      runs
        .filter((r) => r.mode === m)
        .map((r) => ms(r.pause.ms))
        .join(' / '),
      ms(med(m, (r) => r.pause.ms)),
      ratio(med(m, (r) => r.pause.ms) / base),
      `${ms(med(m, (r) => r.pause.mainCpuMs))} / ${ms(med(m, (r) => r.pause.mainWaitMs))}`,
    ]),
  );
  const vsNice0 = med('default', (r) => r.pause.ms) / med('nice0', (r) => r.pause.ms);
  checks.expect(vsNice0 <= GOAL, `beside busy loops, the target's pause during a pipe capture at the default nice 10 ≤ ${GOAL}× at nice 0`, ratio(vsNice0));
  return checks.list;
}
