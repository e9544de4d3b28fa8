/** The preflight step of the headroom gate: gather memory facts, decide, refuse or go on. */
import { CaptureError } from '../errors.ts';
import type { CdpSession } from '../session.ts';
import type { ResolvedEndpoint } from '../endpoint.ts';
import type { RuntimeFacts } from '../runtime.ts';
import { gatherMemoryFacts } from './facts.ts';
import { decideHeadroom, headroomError, type HeadroomOptions, type HeadroomReport } from './decision.ts';

/**
 * Gather the target's memory facts over the preflight session and decide.
 * Throws `insufficient_headroom` when the snapshot does not fit and `force` is not set.
 */
export async function checkHeadroom(session: CdpSession, endpoint: ResolvedEndpoint, facts: RuntimeFacts, options: HeadroomOptions): Promise<HeadroomReport> {
  const memory = await gatherMemoryFacts(session, endpoint);
  const report = decideHeadroom(facts, memory, options);
  if (report.action === 'refuse') throw headroomError(report);
  return report;
}

/** The error of a forced capture that failed, with the gate's numbers and `forced: true` added to its details. */
export function forcedFailure(error: CaptureError, report: HeadroomReport): CaptureError {
  const wrapped = new CaptureError(error.code, error.message, {
    hint: error.hint,
    details: {
      ...error.details,
      forced: true,
      heapUsedBytes: report.heapUsedBytes,
      estimateBytes: report.estimate.extraBytes,
      availableBytes: report.binding?.availableBytes ?? null,
      limitBytes: report.binding?.limitBytes ?? null,
      constraint: report.binding?.source ?? null,
    },
    cause: error.cause,
  });
  wrapped.phase = error.phase;
  wrapped.timings = error.timings;
  return wrapped;
}
