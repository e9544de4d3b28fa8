/**
 * A dry run: connect, gather the preflight facts and the headroom decision,
 * and take nothing (no snapshot, no domain enabled, nothing left in the target).
 */
import { definedOnly } from './defined.ts';
import { CaptureError } from './errors.ts';
import { resolveEndpoint, type EndpointSpec, type ResolvedEndpoint } from './endpoint.ts';
import { CdpSession } from './session.ts';
import { assertExpectedPid, gatherRuntimeFacts, type RuntimeFacts } from './runtime.ts';
import { gatherMemoryFacts } from './headroom/facts.ts';
import { decideHeadroom, type HeadroomOptions, type HeadroomReport } from './headroom/decision.ts';
import { DEFAULT_TIMEOUTS, type CaptureTimeouts } from './capture.ts';
import { throwIfAborted } from './deadline.ts';

export interface PreflightOptions extends HeadroomOptions {
  endpoint: EndpointSpec;
  timeouts?: Partial<Pick<CaptureTimeouts, 'connectMs' | 'commandMs'>>;
  signal?: AbortSignal;
}

/** What a capture would learn in preflight, and what the gate would decide. */
export interface PreflightReport {
  endpoint: ResolvedEndpoint;
  facts: RuntimeFacts;
  headroom: HeadroomReport;
}

/** Run the preflight phase alone; a refusal is reported in `headroom.action`, not thrown. */
export async function preflightOnly(options: PreflightOptions): Promise<PreflightReport> {
  // A timeout the caller left undefined keeps its default.
  const timeouts = { ...DEFAULT_TIMEOUTS, ...definedOnly(options.timeouts) };
  const { signal } = options;
  throwIfAborted(signal);
  const endpoint = await resolveEndpoint(options.endpoint, { timeoutMs: timeouts.connectMs, ...(signal ? { signal } : {}) });
  const session = await CdpSession.connect(endpoint.wsUrl, {
    connectTimeoutMs: timeouts.connectMs,
    commandTimeoutMs: timeouts.commandMs,
    ...(signal ? { signal } : {}),
  });
  try {
    const facts = await gatherRuntimeFacts(session, endpoint);
    assertExpectedPid(endpoint, facts);
    const memory = await gatherMemoryFacts(session, endpoint);
    return { endpoint, facts, headroom: decideHeadroom(facts, memory, options) };
  } catch (err) {
    const error = err instanceof CaptureError ? err : new CaptureError('internal', String(err), { cause: err });
    error.phase ??= 'preflight';
    throw error;
  } finally {
    await session.close();
  }
}
