/**
 * Finished-capture metrics kept in Redis, updated by the same Lua script that
 * moves a record to its terminal status: a finish is counted exactly when it
 * happens, whoever observes, and every API replica serves the same numbers.
 * (Counting from the pub/sub "done" channel missed every capture that finished
 * while a subscriber was reconnecting, and each replica counted only what it saw.)
 *
 * One hash of integer counters (HINCRBY): `f|STATUS|CODE` finished captures;
 * `hb|PHASE|LE` phase durations that fell in bucket LE and no smaller one, and
 * `hu|PHASE` their sum in microseconds; `b|KIND` snapshot bytes of succeeded
 * captures. A finish adds two integers per phase. The Prometheus histogram
 * (cumulative buckets, count, sum in seconds) is computed from them when
 * /metrics is read. (Writing the cumulative buckets per capture cost one
 * HINCRBYFLOAT per bucket at or above the observation, ~160 per capture, a
 * fifth of Redis's CPU: docs/scaling.md.)
 *
 * Upgrade: builds before this one wrote the cumulative histogram itself
 * (`h|PHASE|LE`, `hs|PHASE` seconds, `hc|PHASE`). Those fields are no longer
 * written; a read adds them to the new ones, so the series continue without a
 * reset and no migration step is needed (nor safe: old and new workers may
 * finish captures at the same time during a rolling upgrade).
 */
import type { QueueContext } from './context.ts';
import { withRedisDeadline } from './connection.ts';

/** Histogram buckets of phase durations, in seconds (Prometheus `le`). */
export const PHASE_BUCKETS_SECONDS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600] as const;

/** What a finishing capture adds to the counters. */
export interface FinishedFacts {
  status: 'succeeded' | 'failed' | 'cancelled';
  errorCode: string | null;
  timings: Record<string, number> | null;
  bytes: { uncompressed: number; stored: number } | null;
}

/** The `le` labels in order, `+Inf` last. */
const LES = [...PHASE_BUCKETS_SECONDS.map(String), '+Inf'];

/** The smallest bucket holding `seconds` (the same `<=` test Prometheus clients make). */
function bucketOf(seconds: number): string {
  return String(PHASE_BUCKETS_SECONDS.find((le) => seconds <= le) ?? '+Inf');
}

/**
 * The hash increments for one finished capture: [field, increment] pairs, all
 * integers (the script applies them with HINCRBY, which refuses a fraction
 * after the record has been written: they are rounded here).
 */
export function finishedIncrements(facts: FinishedFacts): [string, number][] {
  const out: [string, number][] = [[`f|${facts.status}|${facts.errorCode ?? ''}`, 1]];
  for (const [phase, ms] of Object.entries(facts.timings ?? {})) {
    // Phase names become label values and hash fields: keep to the alphabet they are written in.
    if (!Number.isFinite(ms) || ms < 0 || !/^[a-z][a-z0-9_]*$/.test(phase)) continue;
    // Timings come in 0.1 ms steps (the phase clock rounds them): microseconds hold them exactly.
    out.push([`hb|${phase}|${bucketOf(ms / 1000)}`, 1], [`hu|${phase}`, Math.round(ms * 1000)]);
  }
  if (facts.status === 'succeeded' && facts.bytes !== null) {
    out.push([`b|uncompressed`, Math.round(facts.bytes.uncompressed)], [`b|stored`, Math.round(facts.bytes.stored)]);
  }
  return out;
}

/** The Lua arguments for `finishedIncrements`: count, then field/increment pairs. */
export function incrementArgs(pairs: [string, number][]): string[] {
  return [String(pairs.length), ...pairs.flatMap(([field, n]) => [field, String(n)])];
}

/** One phase's histogram: cumulative counts per bucket (`le`), total count and sum in seconds. */
export interface PhaseHistogram {
  buckets: { le: string; count: number }[];
  count: number;
  sum: number;
}

/** The finished-capture counters, as Redis holds them now. */
export interface FinishedMetrics {
  finished: { status: string; errorCode: string; count: number }[];
  phases: Record<string, PhaseHistogram>;
  bytes: Record<string, number>;
}

/** The counters from the hash's fields (HGETALL): cumulative histograms built here. */
export function finishedMetricsOf(all: Record<string, string>): FinishedMetrics {
  const out: FinishedMetrics = { finished: [], phases: {}, bytes: {} };
  /** Per phase: observations per bucket (not cumulative), sum in µs, and the old build's cumulative fields. */
  const raw = new Map<string, { per: Map<string, number>; micros: number; old: Map<string, number>; oldSum: number; oldCount: number }>();
  const phase = (name: string) => {
    let r = raw.get(name);
    if (r === undefined) raw.set(name, (r = { per: new Map(), micros: 0, old: new Map(), oldSum: 0, oldCount: 0 }));
    return r;
  };
  for (const [field, value] of Object.entries(all)) {
    const n = Number(value);
    const [kind, a = '', b = ''] = field.split('|');
    if (kind === 'f') out.finished.push({ status: a, errorCode: b, count: n });
    else if (kind === 'hb') phase(a).per.set(b, n);
    else if (kind === 'hu') phase(a).micros = n;
    else if (kind === 'b') out.bytes[a] = n;
    // Written by builds before integer buckets (see the header): already cumulative, sum in seconds.
    else if (kind === 'h') phase(a).old.set(b, n);
    else if (kind === 'hs') phase(a).oldSum = n;
    else if (kind === 'hc') phase(a).oldCount = n;
  }
  for (const [name, r] of raw) {
    let running = 0;
    const buckets = LES.map((le) => {
      running += r.per.get(le) ?? 0;
      // An old observation incremented every bucket at or above it, so an unwritten one counts 0.
      return { le, count: running + (r.old.get(le) ?? 0) };
    });
    out.phases[name] = { buckets, count: running + r.oldCount, sum: r.oldSum + r.micros / 1e6 };
  }
  out.finished.sort((x, y) => `${x.status}|${x.errorCode}`.localeCompare(`${y.status}|${y.errorCode}`));
  return out;
}

/** Read the counters (one HGETALL). */
export async function readFinishedMetrics(ctx: QueueContext): Promise<FinishedMetrics> {
  return finishedMetricsOf(await withRedisDeadline(ctx.redis.hgetall(ctx.keys.finishedMetrics()), ctx.settings.redisTimeoutMs, 'finished metrics'));
}
