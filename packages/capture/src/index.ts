/** @heapcap/capture — the CDP heap snapshot engine. */
export { CaptureError, ERROR_CODES, isCaptureError, toCaptureError, type ErrorCode, type CaptureErrorOptions } from './errors.ts';
export { captureHeapSnapshot, releaseInspector, DEFAULT_TIMEOUTS, type CaptureOptions, type CaptureResult, type CaptureProgress, type CaptureTimeouts, type SnapshotFlags } from './capture.ts';
export { PHASES, PhaseClock, type Phase, type PhaseTimings } from './clock.ts';
export { formatMiB, MIB } from './units.ts';
export { resolveEndpoint, parseHostPort, type EndpointSpec, type ResolvedEndpoint, type ChromiumSelector } from './endpoint.ts';
export { CdpSession, type SessionOptions } from './session.ts';
export type { InspectorRelease, OpenedInspector } from './inspector-close.ts';
export { gatherRuntimeFacts, evaluateValue, type RuntimeFacts } from './runtime.ts';
export { decideWarm, runWarm, type WarmMode, type WarmMethod, type WarmReport } from './warm.ts';
export { SnapshotStream, type SnapshotStreamOptions, type SnapshotStreamStats } from './snapshot-stream.ts';
export { parseV8Version, compareVersions, needsLineEndsWarm, LINE_ENDS_CACHED_SINCE } from './v8-version.ts';
export { withDeadline, sleep, throwIfAborted, cancelledError } from './deadline.ts';
export { preflightOnly, type PreflightOptions, type PreflightReport } from './preflight.ts';
export { decideHeadroom, headroomConstraints, headroomError, type HeadroomOptions, type HeadroomReport, type HeadroomConstraint } from './headroom.ts';
export { gatherMemoryFacts, type MemoryFacts, type CgroupFacts } from './headroom-facts.ts';
export { headroomLines, decisionText } from './headroom-text.ts';
export type { PeakReport } from './headroom-peak.ts';
export { MEMORY_MODELS, modelFamily, modelFor, estimateExtraBytes, type MemoryModel, type MemoryModelOverride, type ModelFamily } from './memory-model.ts';
