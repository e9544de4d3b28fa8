/** A valid capture manifest for store tests that need one without running a capture. */
import type { ArtifactRef, CaptureManifest, StoredArtifact } from '@heapcap/storage';

/** A complete schemaVersion 1 manifest for `ref` and what `put` returned (numbers plausible, not measured). */
export function sampleManifest(ref: ArtifactRef, stored: Pick<StoredArtifact, 'key' | 'location' | 'bytesUncompressed' | 'bytesStored' | 'sha256' | 'gzip' | 'contentType' | 'header'>): CaptureManifest {
  const mb = 1024 * 1024;
  return {
    schemaVersion: 1,
    captureId: ref.captureId,
    target: { id: ref.targetId, kind: 'node', endpoint: '127.0.0.1:9229', labels: { service: 'test' } },
    runtime: { product: 'node', version: 'v20.20.2', v8Version: '11.3.244.8-node.38', pid: 4242 },
    options: { warm: 'auto', gc: false, gzip: ref.gzip },
    warm: { mode: 'auto', decision: 'warmed', reason: 'V8 11.3 < 11.5.130', method: 'debugger', durationMs: 140 },
    heap: { usedBytes: 5 * mb, totalBytes: 8 * mb },
    timings: { connect: 3, preflight: 5, warm: 140, enable: 1, gc: 0, generate: 300, serialize: 120, sink: 4, total: 573 },
    stream: { bytes: stored.bytesUncompressed, chunks: Math.ceil(stored.bytesUncompressed / 102_400), spilledBytes: 0, peakMemoryBytes: 102_400 },
    preflight: { access: 'builtin', rssBytes: 60 * mb, maxRssBytes: 61 * mb, heapLimitBytes: 4096 * mb, constrainedMemoryBytes: null, availableMemoryBytes: null, warnings: [] },
    estimate: { model: { family: 'node-v8-11', factor: 7.4, constantBytes: 2 * mb }, heapUsedBytes: 5 * mb, extraBytes: 39 * mb, peakBytes: 99 * mb },
    decision: { verdict: 'unknown', action: 'capture', binding: null, constraints: [] },
    forced: false,
    peak: { estimateExtraBytes: 39 * mb, estimatePeakBytes: 99 * mb, rssBeforeBytes: 60 * mb, maxRssBeforeBytes: 61 * mb, maxRssAfterBytes: 95 * mb, actualPeakBytes: 95 * mb, actualExtraBytes: 35 * mb, errorRatio: 0.11 },
    artifact: { key: stored.key, location: stored.location, bytesUncompressed: stored.bytesUncompressed, bytesStored: stored.bytesStored, sha256: stored.sha256, gzip: stored.gzip, contentType: stored.contentType },
    snapshot: stored.header,
    trigger: { kind: 'cli', who: 'test', reason: 'store test' },
    startedAt: ref.startedAt.toISOString(),
    finishedAt: new Date(ref.startedAt.getTime() + 573).toISOString(),
    heapcapVersion: '0.1.0',
  };
}
