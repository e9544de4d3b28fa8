/** The manifest written beside each snapshot, built from a capture's result (schema: @heapcap/storage's CaptureManifestSchema). */
import { redactPageUrl, type CaptureResult, type EndpointSpec, type RuntimeFacts, type WarmMode } from '@heapcap/capture';
import type { CaptureManifest, StoredArtifact } from '@heapcap/storage';
import { HEAPCAP_VERSION } from '@heapcap/config';
import type { RedactionReport, Summary } from '@heapcap/analysis';

/** What became of a capture's summary. */
export type CaptureSummaryOutcome =
  | { kind: 'stored'; key: string; location: string; summary: Summary }
  | { kind: 'failed'; code: string; message: string }
  | { kind: 'off' };

export interface CaptureManifestInput {
  captureId: string;
  target: { id: string; kind: EndpointSpec['kind']; endpoint: string; labels: Record<string, string> };
  result: CaptureResult<StoredArtifact>;
  stored: StoredArtifact;
  gzip: boolean;
  warmMode: WarmMode;
  trigger?: { kind: string; who: string; reason?: string | undefined; scheduleId?: string | undefined };
  /** The summary written beside the artifact (or why there is none). */
  summary?: CaptureSummaryOutcome;
  /** What the redactor replaced; undefined when nothing was redacted. */
  redaction?: RedactionReport | undefined;
}

/** Build the manifest (schemaVersion 1); the store validates it against the schema before writing. */
export function buildManifest(input: CaptureManifestInput): CaptureManifest {
  const { result, stored } = input;
  // A redacted capture shows its page's URL without query, fragment and userinfo (issue 41).
  const url = input.redaction?.mode === 'strings' ? redactPageUrl : (u: string): string => u;
  return {
    schemaVersion: 1,
    captureId: input.captureId,
    target: input.target,
    runtime: runtimeOf(result.facts, url),
    options: { warm: input.warmMode, gc: result.gc, gzip: input.gzip, ...result.flags },
    warm: result.warm,
    heap: result.facts.heap,
    timings: result.timings,
    stream: result.stream,
    // The headroom gate: what preflight saw, what it expected, what it decided, what happened.
    preflight: result.headroom.memory,
    estimate: {
      model: result.headroom.model,
      heapUsedBytes: result.headroom.heapUsedBytes,
      extraBytes: result.headroom.estimate.extraBytes,
      peakBytes: result.headroom.estimate.peakBytes,
      source: result.headroom.estimate.source,
      modelBytes: result.headroom.estimate.modelBytes,
      previousBytes: result.headroom.estimate.previousBytes,
    },
    decision: {
      verdict: result.headroom.verdict,
      action: result.headroom.action,
      binding: result.headroom.binding,
      constraints: result.headroom.constraints,
    },
    forced: result.headroom.forced,
    peak: result.peak,
    // node-pid: whether heapcap opened the inspector with SIGUSR1 and closed it again.
    inspector: result.inspector,
    transport: result.transport,
    // chromium: how many targets the selector matched and which one was taken.
    selection: result.endpoint.selected === undefined ? undefined : selectionOf(result.endpoint.selected, url),
    artifact: artifactOf(stored),
    snapshot: stored.header,
    trigger: input.trigger,
    ...summaryLink(input.summary),
    redaction: input.redaction ?? { mode: 'none' },
    startedAt: result.startedAt.toISOString(),
    finishedAt: result.finishedAt.toISOString(),
    heapcapVersion: HEAPCAP_VERSION,
  };
}

/** The manifest's `runtime`: product, versions, pid (Node), URL (Chromium; through `url`, which redacts it or not). */
export function runtimeOf(facts: RuntimeFacts, url: (u: string) => string = (u) => u): CaptureManifest['runtime'] {
  return {
    product: facts.product,
    version: facts.version,
    v8Version: facts.v8Version ?? null,
    pid: facts.pid,
    url: facts.url === undefined ? undefined : url(facts.url),
  };
}

/** The manifest's `artifact`: what the store wrote. */
export function artifactOf(stored: StoredArtifact): CaptureManifest['artifact'] {
  return {
    key: stored.key,
    location: stored.location,
    bytesUncompressed: stored.bytesUncompressed,
    bytesStored: stored.bytesStored,
    sha256: stored.sha256,
    gzip: stored.gzip,
    contentType: stored.contentType,
  };
}

/** The manifest's `selection` (Chromium): how many targets matched and which one was taken. */
export function selectionOf(s: NonNullable<CaptureResult<StoredArtifact>['endpoint']['selected']>, url: (u: string) => string = (u) => u): NonNullable<CaptureManifest['selection']> {
  return { matches: s.matches, pick: s.pick, taken: { type: s.type, title: s.title, url: url(s.url) } };
}

/** The manifest's `summary`: its key and headline numbers, or the error that left the capture without one. */
function summaryLink(outcome: CaptureSummaryOutcome | undefined): Pick<CaptureManifest, 'summary'> {
  if (outcome === undefined || outcome.kind === 'off') return {};
  if (outcome.kind === 'failed') return { summary: { key: null, error: { code: outcome.code, message: outcome.message } } };
  const s = outcome.summary;
  return { summary: { key: outcome.key, nodeCount: s.nodeCount, totalSelfSize: s.totalSelfSize, classCount: s.classes.length } };
}
