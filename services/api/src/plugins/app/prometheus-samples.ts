/**
 * A target's memory curve read back from Prometheus (HEAPCAP_PROMETHEUS_URL):
 * Redis keeps a day of samples, Prometheus keeps what /metrics exported for as
 * long as it retains. The API asks it, not the browser, so the console's CSP
 * stays `connect-src 'self'` and Prometheus needs no credentials of ours.
 */
import type { WatchSample } from '@heapcap/state/watch';
import { ApiError } from '../../errors.ts';

type NumericField = 'heapUsedBytes' | 'heapTotalBytes' | 'heapLimitBytes' | 'rssBytes';

/** The per-target gauges /metrics exports, the sample field each one carries. */
export const TARGET_GAUGES: readonly (readonly [NumericField, string, string])[] = [
  ['heapUsedBytes', 'heapcap_target_heap_used_bytes', "V8 heap used of the target's newest sample (Runtime.getHeapUsage)"],
  ['heapTotalBytes', 'heapcap_target_heap_total_bytes', "V8 heap total of the target's newest sample"],
  ['heapLimitBytes', 'heapcap_target_heap_limit_bytes', "V8 heap limit of the target's newest sample"],
  ['rssBytes', 'heapcap_target_rss_bytes', "Resident set size of the target's newest sample (Node.js targets only)"],
];

// Prometheus refuses a range query of more than 11,000 points per series.
const MAX_POINTS = 11_000;
const QUERY_TIMEOUT_MS = 10_000;

interface Matrix {
  status: string;
  data?: { resultType: string; result: { metric: Record<string, string>; values: [number, string][] }[] };
  error?: string;
}

/** A PromQL string literal (double-quoted, backslash and quote escaped). */
function promString(s: string): string {
  return `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

async function queryRange(base: string, query: string, startS: number, endS: number, stepS: number): Promise<Map<number, number>> {
  const url = `${base}/api/v1/query_range?${new URLSearchParams({ query, start: String(startS), end: String(endS), step: String(stepS) })}`;
  let body: Matrix;
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(QUERY_TIMEOUT_MS), headers: { accept: 'application/json' } });
    body = (await res.json()) as Matrix;
    if (!res.ok || body.status !== 'success') throw new Error(`${res.status} ${body.error ?? ''}`);
  } catch (err) {
    throw new ApiError('unavailable', 'Prometheus (HEAPCAP_PROMETHEUS_URL) did not answer the range query', { dependency: 'prometheus', reason: (err as Error).message.slice(0, 200) });
  }
  // Several heapcap replicas export the same gauge (read from the same Redis): `max by (target)` made it one series.
  const series = body.data?.result[0];
  return new Map((series?.values ?? []).map(([t, v]) => [Math.round(t * 1000), Number(v)]));
}

/**
 * The curve of `targetId` between two times from Prometheus, at most `limit`
 * points evenly stepped (at least 1 s apart), oldest first.
 */
export async function prometheusSamples(base: string, targetId: string, sinceMs: number, untilMs: number, limit: number): Promise<WatchSample[]> {
  const startS = Math.floor(sinceMs / 1000);
  const endS = Math.ceil(untilMs / 1000);
  const stepS = Math.max(1, Math.ceil((endS - startS) / Math.min(limit, MAX_POINTS)));
  const [used, total, heapLimit, rss] = await Promise.all(TARGET_GAUGES.map(([, name]) => queryRange(base, `max by (target) (${name}{target=${promString(targetId)}})`, startS, endS, stepS)));
  const out: WatchSample[] = [];
  for (const [t, heapUsedBytes] of used!) {
    if (t < sinceMs || t > untilMs) continue;
    out.push({ t, heapUsedBytes, heapTotalBytes: total!.get(t) ?? 0, heapLimitBytes: heapLimit!.get(t) ?? null, rssBytes: rss!.get(t) ?? null });
  }
  return out.slice(0, limit);
}
