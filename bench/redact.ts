/**
 * Redaction bench (issue 27): what `--redact strings` costs a capture.
 *
 * A Node 22 heap holder (BENCH_REDACT_HEAP_MB=300: a ~525 MB snapshot), in the
 * same run and on the same target, each repetition in a rotated order:
 * - in-process: the target's own `v8.writeHeapSnapshot()` (the fixture times it);
 * - pipe, pipe-redact: `heapcap capture` (bin/heapcap) into a directory through
 *   the pipe (the default for a local Node target), without and with redaction;
 * - cdp, cdp-redact: the same over CDP (`--transport cdp`), as a remote target.
 * The target's pause is measured from its side (bench/lib/pause-probe.ts).
 *
 * - with BENCH_OLD_HEAPCAP=<an older build's bin/heapcap>: pipe-redact-old and
 *   cdp-redact-old, the same redacted captures by that build (before/after a
 *   change of the redactor, in the same run).
 *
 * Checks (medians of BENCH_REDACT_REPS=3, ratios within this run): the
 * target's pause during a redacted capture ≤ 1.05× its pause during the same
 * capture without redaction, through the pipe and over CDP; the snapshot is
 * ≥ 500 MB (at the default size). Printed: end to end against
 * writeHeapSnapshot, capturer CPU-s per GB (all threads / main), peak RSS,
 * and the part of the pause the target spent neither on a CPU nor waiting for
 * one ("blocked": pause − its main thread's CPU − its run-queue wait), i.e.
 * waiting for heapcap to read (write() to the FIFO or the socket): on a
 * loaded host the pause itself is mostly the other processes' doing, and
 * this is the part a slower capturer adds.
 *
 * Run: npm run bench -- redact   (node --import tsx bench/run.ts redact)
 */
import { rm } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { NodeTarget } from '@heapcap/testkit';
import { cliCapture, ensureCliBuilt, type CliCapture } from './lib/cli-capture.ts';
import { withPauseProbe, type Pause } from './lib/pause-probe.ts';
import { Checks, mb, median, ms, printTable, ratio, type Check } from './lib/report.ts';
import { heapHolderTarget, withTarget } from './lib/targets.ts';
import { withScratchDir } from './lib/tmp.ts';

const HEAP_MB = Number(process.env.BENCH_REDACT_HEAP_MB ?? 300);
const REPS = Math.max(1, Number(process.env.BENCH_REDACT_REPS ?? 3));
const GOAL_PAUSE = 1.05;
const RUN_TIMEOUT_MS = 15 * 60_000;

const OLD_BIN = process.env.BENCH_OLD_HEAPCAP;

type Mode = 'in-process' | 'pipe' | 'pipe-redact' | 'cdp' | 'cdp-redact' | 'pipe-redact-old' | 'cdp-redact-old';
const FLAGS: Record<Exclude<Mode, 'in-process'>, string[]> = {
  pipe: ['--transport', 'pipe'],
  'pipe-redact': ['--transport', 'pipe', '--redact', 'strings'],
  cdp: ['--transport', 'cdp'],
  'cdp-redact': ['--transport', 'cdp', '--redact', 'strings'],
  'pipe-redact-old': ['--transport', 'pipe', '--redact', 'strings'],
  'cdp-redact-old': ['--transport', 'cdp', '--redact', 'strings'],
};
const MODES: Mode[] = ['in-process', 'pipe', 'pipe-redact', 'cdp', 'cdp-redact', ...(OLD_BIN === undefined ? [] : (['pipe-redact-old', 'cdp-redact-old'] as const))];

interface Run {
  mode: Mode;
  rep: number;
  ms: number;
  pause: Pause | undefined;
  cap?: CliCapture;
  load: number;
}

/** The part of the pause the target's main thread was off the CPU and not runnable: waiting for heapcap to read. */
function blocked(run: Run): number | undefined {
  const p = run.pause;
  return p === undefined ? undefined : Math.max(0, p.ms - p.mainCpuMs - p.mainWaitMs);
}

function rotate<T>(modes: T[], rep: number): T[] {
  return modes.map((_, i) => modes[(i + rep) % modes.length] as T);
}

async function inProcess(target: NodeTarget, path: string, rep: number, load: number): Promise<Run> {
  try {
    const { result, pause } = await withPauseProbe(target, () => target.request(`writeHeapSnapshot ${path}`, 'WROTE ', RUN_TIMEOUT_MS));
    return { mode: 'in-process', rep, ms: Number(result.split(' ')[1]), pause, load };
  } finally {
    await rm(path, { force: true });
  }
}

/** Runs the redaction bench; returns its checks. */
export async function redactBench(): Promise<Check[]> {
  const checks = new Checks('redact');
  const runs: Run[] = [];
  await ensureCliBuilt();
  await withScratchDir('redact', async (dir) => {
    console.log(`Node 22 heap holder, HEAP_MB=${HEAP_MB}; ${REPS} repetitions; load average now ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
    await withTarget(heapHolderTarget('22', HEAP_MB), async ({ target, inspect }) => {
      // The first snapshot of a freshly built heap is much slower than the next ones: untimed.
      await inProcess(target, join(dir, 'warm.heapsnapshot'), -1, 0);
      for (let rep = 0; rep < REPS; rep++) {
        for (const mode of rotate<Mode>(MODES, rep)) {
          const load = loadavg()[0] ?? 0;
          let run: Run;
          if (mode === 'in-process') run = await inProcess(target, join(dir, `inproc-${rep}.heapsnapshot`), rep, load);
          else {
            const out = join(dir, `${mode}-${rep}`);
            const { result, pause } = await withPauseProbe(target, () => cliCapture(['--node', inspect], out, ['--pipe-dir', dir, ...FLAGS[mode]], RUN_TIMEOUT_MS, process.env, mode.endsWith('-old') ? OLD_BIN : undefined));
            await rm(out, { recursive: true, force: true });
            run = { mode, rep, ms: result.timings.total, pause, cap: result, load };
          }
          runs.push(run);
          const c = run.cap;
          console.log(
            `  rep ${rep} ${mode.padEnd(11)} ${ms(run.ms).padStart(7)} ms; pause ${ms(run.pause?.ms)} (target CPU ${ms(run.pause?.mainCpuMs)}, run-queue ${ms(run.pause?.mainWaitMs)}, blocked ${ms(blocked(run))})` +
              (c === undefined ? '' : `; ${mb(c.bytes)} MB, CPU ${ms(c.cpuMs)} ms (main ${ms(c.mainCpuMs)}), peak RSS ${mb(c.peakRssKb * 1024)} MB, spilled ${mb(c.spilledBytes)} MB`) +
              `; load ${load.toFixed(1)}`,
          );
        }
      }
    });
  });
  const med = (mode: Mode, pick: (r: Run) => number | undefined): number => {
    const values = runs.filter((r) => r.mode === mode).flatMap((r) => {
      const v = pick(r);
      return v === undefined ? [] : [v];
    });
    return values.length === 0 ? Number.NaN : median(values);
  };
  const modes = MODES;
  printTable(
    ['mode', 'median ms', 'vs in-process', 'pause ms (target side)', 'target CPU ms', 'target blocked ms', 'capturer CPU-s/GB (all / main)', 'peak RSS MB (max)'],
    modes.map((m) => {
      const caps = runs.filter((r) => r.mode === m).flatMap((r) => (r.cap === undefined ? [] : [r.cap]));
      const perGb = (main: boolean): string => med(m, (r) => (r.cap === undefined ? undefined : (main ? r.cap.mainCpuMs : r.cap.cpuMs) / 1000 / (r.cap.bytes / 1e9))).toFixed(2);
      return [
        m,
        ms(med(m, (r) => r.ms)),
        ratio(med(m, (r) => r.ms) / med('in-process', (r) => r.ms)),
        ms(med(m, (r) => r.pause?.ms)),
        ms(med(m, (r) => r.pause?.mainCpuMs)),
        ms(med(m, blocked)),
        caps.length === 0 ? '-' : `${perGb(false)} / ${perGb(true)}`,
        caps.length === 0 ? '-' : mb(Math.max(...caps.map((c) => c.peakRssKb * 1024))),
      ];
    }),
  );
  const loads = runs.map((r) => r.load);
  console.log(`load average during the runs: min ${Math.min(...loads).toFixed(1)}, median ${median(loads).toFixed(1)}, max ${Math.max(...loads).toFixed(1)} (2 cores)\n`);
  const bytes = runs.find((r) => r.cap !== undefined)?.cap?.bytes ?? 0;
  if (HEAP_MB >= 300) checks.expect(bytes >= 500e6, 'the snapshot is at least 500 MB', `${mb(bytes)} MB`);
  for (const [plain, redacted] of [['pipe', 'pipe-redact'], ['cdp', 'cdp-redact']] as const) {
    const r = med(redacted, (x) => x.pause?.ms) / med(plain, (x) => x.pause?.ms);
    checks.expect(r <= GOAL_PAUSE, `${plain}: the target's pause with redaction ≤ ${GOAL_PAUSE}× without`, ratio(r));
    if (OLD_BIN === undefined) console.log(`${plain}: target blocked with redaction / without: ${ratio(med(redacted, blocked) / med(plain, blocked))}`);
    else {
      const old = med(`${redacted}-old`, (x) => x.pause?.ms) / med(plain, (x) => x.pause?.ms);
      console.log(`${plain}: pause with redaction / without: ${ratio(r)} this build, ${ratio(old)} ${OLD_BIN}`);
      console.log(`${plain}: target blocked with redaction / without: ${ratio(med(redacted, blocked) / med(plain, blocked))} this build, ${ratio(med(`${redacted}-old`, blocked) / med(plain, blocked))} ${OLD_BIN}`);
    }
  }
  return checks.list;
}

// Standalone: `node --import tsx bench/redact.ts`.
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => process.exit(130));
  const failed = (await redactBench()).filter((c) => !c.ok);
  process.exitCode = failed.length > 0 ? 1 : 0;
}
