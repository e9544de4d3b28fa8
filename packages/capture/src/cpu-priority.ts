/**
 * The capturing process yields the CPU to its targets.
 *
 * A target is paused for the whole snapshot: its main thread generates and
 * serializes while nothing else of it runs. On a host it shares with heapcap
 * (always so for the pipe transport, often for CDP: a sidecar, a laptop, a
 * 2-core VM), heapcap's hashing, summary, gzip and upload compete with that
 * thread for the cores, and every millisecond the target waits for a CPU is a
 * millisecond more of outage. Measured on a 2-core host, a 525 MB capture
 * through the pipe: the target's main thread waited 0.8-3.5 s for a CPU with
 * heapcap at the target's priority, against 0.2-0.3 s while writing its own
 * snapshot alone (bench/README.md, `throughput`).
 *
 * So heapcap lowers its own priority (a nice value, 10 by default): the
 * kernel then runs the target first whenever both want a core, and heapcap
 * works in what is left, falling behind into its memory buffer and spill when
 * it must and catching up once the target runs again. On a host with cores to
 * spare nothing changes. It is one-way: an unprivileged process cannot raise
 * its priority again, so it is set once, at start, for every thread (threads
 * created later inherit it from the thread that creates them).
 */
import { readdirSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';

/** What `lowerCpuPriority` did. */
export interface CpuPriorityReport {
  /** The nice value asked for. */
  nice: number;
  /** Threads whose priority was lowered to it (Linux); 1 elsewhere (the process). */
  lowered: number;
  /** Why some could not be lowered, if any could not. */
  failed?: string;
}

/**
 * Lowers every thread of this process to at least `nice` (0-19; 0 leaves the
 * priority alone). Never raises a priority and never throws.
 */
export function lowerCpuPriority(nice: number): CpuPriorityReport {
  const report: CpuPriorityReport = { nice, lowered: 0 };
  if (nice <= 0) return report;
  let threads: number[];
  try {
    // Linux: setpriority() applies to one thread; every thread is listed here.
    threads = readdirSync('/proc/self/task').map(Number);
  } catch {
    threads = [0];
  }
  for (const tid of threads) {
    try {
      if (getPriority(tid) >= nice) continue;
      setPriority(tid, nice);
      report.lowered += 1;
    } catch (err) {
      // A thread that just ended, or a platform without per-thread priorities.
      report.failed ??= (err as Error).message;
    }
  }
  return report;
}
