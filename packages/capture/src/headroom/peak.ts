/**
 * The check afterwards: the target's peak RSS during the capture against the
 * estimate, recorded with every capture so the model can be checked on real
 * fleets (docs/headroom.md).
 */
import type { CdpSession } from '../session.ts';
import type { ResolvedEndpoint } from '../endpoint.ts';
import { readMaxRss } from './facts.ts';
import type { HeadroomReport } from './decision.ts';

/** Estimate vs actual peak memory of one capture (bytes). */
export interface PeakReport {
  estimateExtraBytes: number;
  estimatePeakBytes: number | null;
  rssBeforeBytes: number | null;
  /** The target's peak RSS before and after the capture (getrusage maxrss; Node only). */
  maxRssBeforeBytes: number | null;
  maxRssAfterBytes: number | null;
  /**
   * The peak during the capture, when the capture set a new high-water mark;
   * otherwise null (the capture peaked below an earlier peak, at most maxRssBeforeBytes).
   */
  actualPeakBytes: number | null;
  /** actualPeakBytes − rssBeforeBytes: what the model estimates. */
  actualExtraBytes: number | null;
  /** (estimate − actual) / actual, on the extra memory; positive = the model over-estimated. */
  errorRatio: number | null;
  note: string | undefined;
}

/** Read the target's peak RSS after the snapshot and compare; never throws (the answer is best effort). */
export async function readPeak(session: CdpSession, endpoint: ResolvedEndpoint, report: HeadroomReport, timeoutMs: number): Promise<PeakReport> {
  const before = report.memory.maxRssBytes;
  const rss = report.memory.rssBytes;
  const base = { estimateExtraBytes: report.estimate.extraBytes, estimatePeakBytes: report.estimate.peakBytes, rssBeforeBytes: rss, maxRssBeforeBytes: before };
  let after: number | null;
  try {
    after = await readMaxRss(session, endpoint, timeoutMs);
  } catch (err) {
    return { ...base, maxRssAfterBytes: null, actualPeakBytes: null, actualExtraBytes: null, errorRatio: null, note: `reading the peak failed: ${(err as Error).message}` };
  }
  if (after === null || rss === null) {
    const note = endpoint.product === 'chromium' ? 'a page cannot read its renderer process peak RSS' : 'the target does not expose its peak RSS';
    return { ...base, maxRssAfterBytes: after, actualPeakBytes: null, actualExtraBytes: null, errorRatio: null, note };
  }
  if (before !== null && after <= before) {
    return {
      ...base,
      maxRssAfterBytes: after,
      actualPeakBytes: null,
      actualExtraBytes: null,
      errorRatio: null,
      note: 'the capture did not raise the target’s earlier peak RSS: its own peak is at most maxRssBeforeBytes',
    };
  }
  const actualExtraBytes = after - rss;
  return {
    ...base,
    maxRssAfterBytes: after,
    actualPeakBytes: after,
    actualExtraBytes,
    errorRatio: actualExtraBytes > 0 ? (report.estimate.extraBytes - actualExtraBytes) / actualExtraBytes : null,
    note: undefined,
  };
}
