/**
 * Finished-capture metrics kept in Redis, updated by the same Lua script that
 * moves a record to its terminal status: a finish is counted exactly when it
 * happens, whoever observes, and every API replica serves the same numbers.
 * (Counting from the pub/sub "done" channel missed every capture that finished
 * while a subscriber was reconnecting, and each replica counted only what it saw.)
 *
 * One hash of counters: `f|STATUS|CODE` finished captures; `h|PHASE|LE`,
 * `hs|PHASE`, `hc|PHASE` a cumulative histogram of phase durations (seconds);
 * `b|KIND` snapshot bytes of succeeded captures.
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

/** The hash increments for one finished capture: [field, increment] pairs (HINCRBYFLOAT). */
export function finishedIncrements(facts: FinishedFacts): [string, number][] {
  const out: [string, number][] = [[`f|${facts.status}|${facts.errorCode ?? ''}`, 1]];
  for (const [phase, ms] of Object.entries(facts.timings ?? {})) {
    // Phase names become label values and hash fields: keep to the alphabet they are written in.
    if (!Number.isFinite(ms) || ms < 0 || !/^[a-z][a-z0-9_]*$/.test(phase)) continue;
    const seconds = ms / 1000;
    for (const le of PHASE_BUCKETS_SECONDS) if (seconds <= le) out.push([`h|${phase}|${le}`, 1]);
    out.push([`h|${phase}|+Inf`, 1], [`hs|${phase}`, seconds], [`hc|${phase}`, 1]);
  }
  if (facts.status === 'succeeded' && facts.bytes !== null) {
    out.push([`b|uncompressed`, facts.bytes.uncompressed], [`b|stored`, facts.bytes.stored]);
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

/** Read the counters (one HGETALL). */
export async function readFinishedMetrics(ctx: QueueContext): Promise<FinishedMetrics> {
  const all = await withRedisDeadline(ctx.redis.hgetall(ctx.keys.finishedMetrics()), ctx.settings.redisTimeoutMs, 'finished metrics');
  const out: FinishedMetrics = { finished: [], phases: {}, bytes: {} };
  const phase = (name: string): PhaseHistogram => (out.phases[name] ??= { buckets: [], count: 0, sum: 0 });
  for (const [field, value] of Object.entries(all)) {
    const n = Number(value);
    const [kind, a = '', b = ''] = field.split('|');
    if (kind === 'f') out.finished.push({ status: a, errorCode: b, count: n });
    else if (kind === 'h') phase(a).buckets.push({ le: b, count: n });
    else if (kind === 'hs') phase(a).sum = n;
    else if (kind === 'hc') phase(a).count = n;
    else if (kind === 'b') out.bytes[a] = n;
  }
  const order = (le: string): number => (le === '+Inf' ? Infinity : Number(le));
  for (const h of Object.values(out.phases)) {
    // A bucket no observation fell into was never written (an observation increments every
    // bucket at or above it, so a missing one counts 0); the exposition still lists it.
    for (const le of [...PHASE_BUCKETS_SECONDS.map(String), '+Inf']) {
      if (!h.buckets.some((x) => x.le === le)) h.buckets.push({ le, count: 0 });
    }
    h.buckets.sort((x, y) => order(x.le) - order(y.le));
  }
  out.finished.sort((x, y) => `${x.status}|${x.errorCode}`.localeCompare(`${y.status}|${y.errorCode}`));
  return out;
}
