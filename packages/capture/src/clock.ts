/**
 * The phase clock: contiguous phases on the monotonic clock, so the phase
 * durations add up to the total (up to rounding).
 */
import { performance } from 'node:perf_hooks';

/**
 * Phases of one capture, in order. `enable` is the HeapProfiler.enable round
 * trip (0.3-5 ms to a local target here, depending on load); `gc` is HeapProfiler.collectGarbage
 * and stays 0 unless a GC was asked for (before `enable` had its own phase,
 * `gc` read 2-17 ms without one).
 */
export const PHASES = ['connect', 'preflight', 'warm', 'enable', 'gc', 'generate', 'serialize', 'sink'] as const;
export type Phase = (typeof PHASES)[number];

/** Milliseconds per phase plus the total. */
export type PhaseTimings<P extends string = Phase> = Record<P, number> & { total: number };

/**
 * Records when each phase started; a phase ends when the next one starts.
 * `phases` is the ordered list (default: the snapshot's PHASES; a sampling
 * profile has its own).
 */
export class PhaseClock<P extends string = Phase> {
  readonly #start: number;
  readonly #phases: readonly P[];
  readonly #marks = new Map<P, number>();
  #end: number | undefined;
  #current: P | undefined;

  constructor(now: number = performance.now(), phases: readonly P[] = PHASES as readonly string[] as readonly P[]) {
    this.#start = now;
    this.#phases = phases;
  }

  /**
   * Start `phase` at `at` (default now). Phases not started take 0 ms. The
   * first phase starts with the clock: the time between (microseconds of code,
   * or a thread preempted on a busy host: 14 ms once) is in it, not in a gap
   * outside every phase.
   */
  enter(phase: P, at: number = performance.now()): void {
    this.#marks.set(phase, this.#marks.size === 0 ? this.#start : at);
    this.#current = phase;
  }

  /** The phase running now (for error records). */
  get current(): P | undefined {
    return this.#current;
  }

  /** Stop the clock. */
  stop(at: number = performance.now()): void {
    this.#end ??= at;
  }

  /** Durations in ms, rounded to 0.1 ms. */
  timings(): PhaseTimings<P> {
    const end = this.#end ?? performance.now();
    const starts = this.#phases.map((p) => this.#marks.get(p));
    const out: Record<string, number> = { total: round(end - this.#start) };
    this.#phases.forEach((phase, i) => {
      const from = starts[i];
      if (from === undefined) {
        out[phase] = 0;
        return;
      }
      const next = starts.slice(i + 1).find((s) => s !== undefined) ?? end;
      out[phase] = round(next - from);
    });
    return out as PhaseTimings<P>;
  }
}

function round(ms: number): number {
  return Math.round(ms * 10) / 10;
}
