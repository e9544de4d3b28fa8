/**
 * The capturer's CPU per GB as users run it: `heapcap capture` (bin/heapcap,
 * the bundle) on a Node 22 heap holder (BENCH_CLI_CPU_HEAP_MB=300: ~525 MB),
 * gzip into a directory, the streaming summary on, process start to exit,
 * CPU of all its threads and of its main thread (lib/cli-capture.ts).
 *
 * Modes, alternating, BENCH_CLI_CPU_REPS=3 times each, on the same target:
 * - new, pipe: this build with its defaults (a local target: the pipe);
 * - new, CDP: this build with `--transport cdp` (a remote target, a browser);
 * - old: another build's bin/heapcap, when BENCH_OLD_HEAPCAP names one: e.g.
 *   main as it was when issue 14 was filed,
 *     git worktree add --detach /tmp/old 365d954 && (cd /tmp/old && bash scripts/bootstrap.sh && node scripts/build.mjs)
 *     BENCH_OLD_HEAPCAP=/tmp/old/bin/heapcap npm run bench -- cli-cpu
 *
 * Every build runs at the target's priority here (HEAPCAP_NICE=0; older
 * builds know no such setting), so the CPU times compare.
 *
 * Checks, with an old build: both new modes use at most half its CPU per GB
 * (medians). Without one, the table only.
 */
import { rm } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { cliCapture, ensureCliBuilt, type CliCapture } from './lib/cli-capture.ts';
import { Checks, mb, median, printTable, ratio, type Check } from './lib/report.ts';
import { heapHolderTarget, withTarget } from './lib/targets.ts';
import { withScratchDir } from './lib/tmp.ts';

const HEAP_MB = Number(process.env.BENCH_CLI_CPU_HEAP_MB ?? 300);
const REPS = Math.max(1, Number(process.env.BENCH_CLI_CPU_REPS ?? 3));
const OLD = process.env.BENCH_OLD_HEAPCAP;
const RUN_TIMEOUT_MS = 15 * 60_000;

interface Mode {
  name: string;
  extra: string[];
  bin?: string;
}

/** Runs the cli-cpu bench; returns its checks. */
export async function cliCpuBench(): Promise<Check[]> {
  const checks = new Checks('cli-cpu');
  const modes: Mode[] = [
    { name: 'new, pipe', extra: [] },
    { name: 'new, CDP', extra: ['--transport', 'cdp'] },
    ...(OLD === undefined ? [] : [{ name: 'old', extra: [], bin: OLD }]),
  ];
  if (OLD === undefined) console.log('BENCH_OLD_HEAPCAP is not set: the new build only (see the header of bench/cli-cpu.ts)');
  await ensureCliBuilt();
  const runs = new Map<string, CliCapture[]>(modes.map((m) => [m.name, []]));
  await withScratchDir('cli-cpu', async (dir) => {
    console.log(`Node 22 heap holder, HEAP_MB=${HEAP_MB}; ${REPS} repetitions; load average now ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
    await withTarget(heapHolderTarget('22', HEAP_MB), async ({ inspect }) => {
      for (let rep = 0; rep < REPS; rep++) {
        for (const mode of rep % 2 === 0 ? modes : [...modes].reverse()) {
          const out = join(dir, `run-${rep}`);
          // Older builds refuse settings they do not know, HEAPCAP_NICE among them (and run at nice 0 anyway).
          const env: NodeJS.ProcessEnv = { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' };
          if (mode.bin === undefined) env.HEAPCAP_NICE = '0';
          else delete env.HEAPCAP_NICE;
          const cap = await cliCapture(['--node', inspect], out, mode.extra, RUN_TIMEOUT_MS, env, mode.bin);
          await rm(out, { recursive: true, force: true });
          runs.get(mode.name)?.push(cap);
          const perGb = (ms: number): string => (ms / 1000 / (cap.bytes / 1e9)).toFixed(2);
          console.log(
            `  rep ${rep} ${mode.name.padEnd(9)} ${mb(cap.bytes)} MB → ${mb(cap.storedBytes)} MB in ${Math.round(cap.timings.total)} ms; CPU ${perGb(cap.cpuMs)} CPU-s/GB (main ${perGb(cap.mainCpuMs)}), spilled ${mb(cap.spilledBytes)} MB, peak RSS ${mb(cap.peakRssKb * 1024)} MB; load ${loadavg()[0]?.toFixed(1)}`,
          );
        }
      }
    });
  });

  const perGb = (caps: CliCapture[], pick: (c: CliCapture) => number): number => median(caps.map((c) => pick(c) / 1000 / (c.bytes / 1e9)));
  const all = (name: string): number => perGb(runs.get(name) ?? [], (c) => c.cpuMs);
  const main = (name: string): number => perGb(runs.get(name) ?? [], (c) => c.mainCpuMs);
  printTable(
    ['build', 'CPU-s/GB, all threads (median)', 'main thread', 'other threads', OLD === undefined ? '' : 'vs old'],
    modes.map((m) => [m.name, all(m.name).toFixed(2), main(m.name).toFixed(2), (all(m.name) - main(m.name)).toFixed(2), OLD === undefined ? '' : ratio(all(m.name) / all('old'))]),
  );
  if (OLD !== undefined) {
    for (const m of modes.filter((x) => x.bin === undefined)) {
      const r = all(m.name) / all('old');
      checks.expect(r <= 0.5, `${m.name}: at most half the CPU per GB of the old build`, `${all(m.name).toFixed(2)} vs ${all('old').toFixed(2)} CPU-s/GB (${ratio(r)})`);
    }
  }
  return checks.list;
}
