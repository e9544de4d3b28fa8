/**
 * The target's pause, from the target's side: the test fixtures' `pauses`
 * command runs a 1 ms timer inside the target and records every event-loop
 * gap over 20 ms on process.hrtime (CLOCK_MONOTONIC, shared by every process
 * on the host). A heap snapshot blocks the target's main thread from the
 * start of generation to the end of serialization, whoever asked for it, so
 * the longest gap while a capture runs is the pause that capture caused.
 */
import type { NodeTarget } from '@heapcap/testkit';
import { cpuDeltaMs, sampleCpu } from './thread-cpu.ts';

/** The longest main-thread block of the target while `fn` ran, on the shared monotonic clock. */
export interface Pause {
  ms: number;
  startNs: bigint;
  endNs: bigint;
  /**
   * The target's main thread while `fn` ran: CPU time, and time spent runnable
   * but waiting for a CPU (schedstat). On a loaded host the pause is CPU + wait,
   * and the wait is the other processes' doing.
   */
  mainCpuMs: number;
  mainWaitMs: number;
}

/** Runs `fn` with the target's pause probe on; returns its result and the longest pause. */
export async function withPauseProbe<T>(target: NodeTarget, fn: () => Promise<T>): Promise<{ result: T; pause: Pause }> {
  await target.request('pauses start', 'PAUSES ');
  const cpu0 = sampleCpu(target.pid);
  const result = await fn();
  const cpu = cpuDeltaMs(cpu0, sampleCpu(target.pid));
  const reply = await target.request('pauses read', 'PAUSES ');
  const gaps = (JSON.parse(reply.slice('PAUSES '.length)) as [string, string][]).map(([a, b]) => ({ startNs: BigInt(a), endNs: BigInt(b) }));
  let longest = { startNs: 0n, endNs: 0n };
  for (const g of gaps) if (g.endNs - g.startNs > longest.endNs - longest.startNs) longest = g;
  return { result, pause: { ...longest, ms: Number(longest.endNs - longest.startNs) / 1e6, mainCpuMs: cpu.mainMs, mainWaitMs: cpu.waitMs } };
}
