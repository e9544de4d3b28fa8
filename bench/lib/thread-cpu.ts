/**
 * On-CPU time of a process's threads from /proc/PID/task/TID/schedstat
 * (nanoseconds, unlike the 10 ms ticks of /proc/PID/stat).
 *
 * Why: the machine has 2 cores shared with other engineers' test runs, so a
 * wall-clock loop timing moves by 2x when someone else starts a build. The
 * time the loop's thread actually spent on a CPU does not, so the safety
 * bench decides on it and reports wall time beside it.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** CPU nanoseconds of a process's main thread and of all its threads, plus run-queue wait of the main thread. */
export interface CpuSample {
  mainNs: number;
  allNs: number;
  mainWaitNs: number;
}

function schedstat(pid: number, tid: number): [number, number] {
  // "<on-cpu ns> <run-queue wait ns> <timeslices>"
  const [run, wait] = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').trim().split(/\s+/).map(Number);
  return [run ?? 0, wait ?? 0];
}

/** Reads the CPU counters of `pid` now; throws if the process is gone. */
export function sampleCpu(pid: number): CpuSample {
  const [mainNs, mainWaitNs] = schedstat(pid, pid);
  let allNs = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      allNs += schedstat(pid, Number(tid))[0];
    } catch {
      // A thread that exited between readdir and read: its time is gone with it.
    }
  }
  return { mainNs, allNs, mainWaitNs };
}

/** Difference of two samples, in milliseconds. */
export function cpuDeltaMs(from: CpuSample, to: CpuSample): { mainMs: number; allMs: number; waitMs: number } {
  return {
    mainMs: (to.mainNs - from.mainNs) / 1e6,
    allMs: (to.allNs - from.allNs) / 1e6,
    waitMs: (to.mainWaitNs - from.mainWaitNs) / 1e6,
  };
}
