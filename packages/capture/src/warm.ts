/**
 * The warm step: make V8 compute and cache every script's line ends before
 * the snapshot. V8 before 11.5.130 otherwise rescans a script's source for
 * every function while generating the snapshot: on Node 20 a process with a
 * 76 MB snapshot and a one-line bundle took 92 s without warm, ~4 s with it.
 *
 * Two ways were seen to cache line ends (INSPECTOR-FACTS.md):
 * - `Debugger.enable` + `Debugger.disable`: caches them on every Script
 *   (they stay after disable); cost grows with the number of scripts.
 * - `Profiler.start` + `Profiler.stop`: only scripts that still have
 *   compiled code; functions whose code was flushed stay cold.
 * `debugger` is the default: it covers every script, so the snapshot speed-up
 * does not depend on what the target happened to have compiled. The bench
 * (`bench/warm.ts`) measures both on the target and its CPU speed afterwards.
 */
import { performance } from 'node:perf_hooks';
import type { CdpSession } from './session.ts';
import { needsLineEndsWarm } from './v8-version.ts';

export type WarmMode = 'auto' | 'always' | 'never';
export type WarmMethod = 'debugger' | 'profiler';

/** What the warm step decided, why, and what it cost. */
export interface WarmReport {
  mode: WarmMode;
  decision: 'warmed' | 'skipped';
  reason: string;
  method?: WarmMethod;
  durationMs?: number;
}

/** Decide whether to warm, from the mode and the target's V8 version. */
export function decideWarm(mode: WarmMode, v8Version: string | undefined): { warm: boolean; reason: string } {
  if (mode === 'never') return { warm: false, reason: 'warm: never was requested' };
  if (mode === 'always') return { warm: true, reason: 'warm: always was requested' };
  const needs = needsLineEndsWarm(v8Version);
  if (needs === undefined) {
    return { warm: true, reason: `V8 version unknown (${v8Version ?? 'not reported'}); warming to be safe` };
  }
  return needs
    ? { warm: true, reason: `V8 ${v8Version} < 11.5.130 recomputes script line ends during snapshot generation` }
    : { warm: false, reason: `V8 ${v8Version} >= 11.5.130 caches line ends itself` };
}

/** Run the warm step over the session; leaves the domains as they were (disables only what it enabled). */
export async function runWarm(session: CdpSession, method: WarmMethod): Promise<number> {
  const t0 = performance.now();
  if (method === 'debugger') {
    await session.send('Debugger.enable', {});
    // Disabling right away: the cached line ends stay on the Scripts.
    await session.send('Debugger.disable');
  } else {
    await session.send('Profiler.enable');
    try {
      await session.send('Profiler.start');
      await session.send('Profiler.stop');
    } finally {
      await session.send('Profiler.disable');
    }
  }
  return Math.round((performance.now() - t0) * 10) / 10;
}
