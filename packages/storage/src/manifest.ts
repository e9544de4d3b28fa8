/**
 * The manifest written beside each snapshot (`<captureId>.manifest.json`):
 * what was captured, from where, how, how long each phase took, what the
 * headroom gate decided, and what was stored. The one schema of it: the
 * pipeline builds manifests typed against it, the stores validate what they
 * write with it. Unknown top-level keys are kept and unknown nested keys
 * ignored, so an older reader never rejects a newer manifest.
 */
import { z } from 'zod';
import { CaptureError } from '@heapcap/errors';

const ms = z.number().nonnegative();
const bytes = z.number().int().nonnegative();
const maybeBytes = bytes.nullable();

const constraint = z.object({
  source: z.enum(['cgroup', 'constrained-memory', 'configured', 'host']),
  limitBytes: bytes,
  usageBytes: bytes,
  marginBytes: bytes,
  availableBytes: z.number().int(),
  where: z.string(),
});


const target = z.object({
  id: z.string().min(1),
  kind: z.enum(['node', 'node-pid', 'chromium']),
  endpoint: z.string(),
  labels: z.record(z.string(), z.string()),
});
const runtime = z.object({
  product: z.enum(['node', 'chromium']),
  version: z.string(),
  // null when the target would not say (the engine then warms to be safe).
  v8Version: z.string().nullable(),
  pid: z.number().int().positive().optional(),
  url: z.string().optional(),
});
const artifact = z.object({
  key: z.string().min(1),
  location: z.string().min(1),
  bytesUncompressed: bytes,
  bytesStored: bytes,
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  gzip: z.boolean(),
  contentType: z.string(),
});
/** Who asked and why; `scheduleId` when a schedule made the capture. */
const trigger = z.object({ kind: z.string().min(1), who: z.string(), reason: z.string().optional(), scheduleId: z.string().optional() }).optional();
const selection = z
  .object({
    matches: z.number().int().positive(),
    pick: z.enum(['only', 'first']),
    taken: z.object({ type: z.string(), title: z.string(), url: z.string() }),
  })
  .optional();
const inspector = z
  .object({
    openedByHeapcap: z.boolean(),
    closed: z.boolean(),
    address: z.string().optional(),
    note: z.string().optional(),
  })
  .optional();

/** Schema of manifest JSON, schemaVersion 1. */
export const CaptureManifestSchema = z.looseObject({
  schemaVersion: z.literal(1),
  captureId: z.string().min(1),
  // Absent in snapshot manifests written before sampling profiles existed.
  kind: z.literal('snapshot').optional(),
  target,
  runtime,
  options: z.object({
    warm: z.enum(['auto', 'always', 'never']),
    gc: z.boolean(),
    gzip: z.boolean(),
    exposeInternals: z.boolean().optional(),
    captureNumericValue: z.boolean().optional(),
    treatGlobalObjectsAsRoots: z.boolean().optional(),
  }),
  warm: z.object({
    mode: z.enum(['auto', 'always', 'never']),
    decision: z.enum(['warmed', 'skipped']),
    reason: z.string(),
    method: z.string().optional(),
    durationMs: ms.optional(),
  }),
  heap: z.object({ usedBytes: bytes, totalBytes: bytes }),
  // Milliseconds from the worker's monotonic clock; phases add up to `total`.
  timings: z.object({
    connect: ms,
    preflight: ms,
    warm: ms,
    // HeapProfiler.enable. Absent in manifests written before it had a phase of its
    // own: there `gc` includes it (2-17 ms) even when no GC was asked for.
    enable: ms.default(0),
    gc: ms,
    generate: ms,
    serialize: ms,
    sink: ms,
    total: ms,
  }),
  // How the snapshot stream went: bytes and chunks received, bytes spilled to disk, peak memory held.
  stream: z.object({ bytes, chunks: bytes, spilledBytes: bytes, peakMemoryBytes: bytes }),
  // The headroom gate: what preflight saw, what it expected, what it decided, what happened afterwards.
  preflight: z.object({
    access: z.string(),
    rssBytes: maybeBytes,
    maxRssBytes: maybeBytes,
    heapLimitBytes: maybeBytes,
    constrainedMemoryBytes: maybeBytes,
    availableMemoryBytes: maybeBytes,
    warnings: z.array(z.string()),
  }),
  estimate: z.object({
    model: z.object({ family: z.string(), factor: z.number(), constantBytes: z.number(), minimumBytes: z.number().optional(), perDomNodeBytes: z.number().optional() }),
    heapUsedBytes: bytes,
    extraBytes: bytes,
    peakBytes: maybeBytes,
    // Where extraBytes came from: the model, or this target's previous capture scaled to today's heap.
    // Optional: manifests written before the field existed lack it (they were all `model`).
    source: z.enum(['model', 'previous capture']).optional(),
    modelBytes: bytes.optional(),
    previousBytes: maybeBytes.optional(),
  }),
  decision: z.object({
    verdict: z.enum(['fits', 'exceeds', 'unknown']),
    action: z.enum(['capture', 'refuse']),
    binding: constraint.nullable(),
    constraints: z.array(constraint),
  }),
  // True when the gate said `exceeds` and the capture was taken anyway.
  forced: z.boolean(),
  peak: z.object({
    estimateExtraBytes: bytes,
    estimatePeakBytes: maybeBytes,
    rssBeforeBytes: maybeBytes,
    maxRssBeforeBytes: maybeBytes,
    maxRssAfterBytes: maybeBytes,
    actualPeakBytes: maybeBytes,
    actualExtraBytes: z.number().int().nullable(),
    errorRatio: z.number().nullable(),
    note: z.string().optional(),
  }),
  artifact,
  // null when the snapshot's header could not be read.
  snapshot: z
    .object({
      nodeCount: bytes,
      edgeCount: bytes,
      traceFunctionCount: bytes.optional(),
      nodeFields: z.array(z.string()),
      edgeFields: z.array(z.string()),
    })
    .nullable(),
  trigger,
  startedAt: z.iso.datetime({ offset: true }),
  finishedAt: z.iso.datetime({ offset: true }),
  heapcapVersion: z.string().min(1),
  // Chromium: how many targets the selector matched, how it picked, which one was taken.
  selection,
  // How the snapshot bytes travelled (CDP messages or the local pipe), and why.
  // Absent in manifests written before the pipe existed (they all used CDP).
  transport: z
    .object({ requested: z.enum(['auto', 'cdp', 'pipe']), used: z.enum(['cdp', 'pipe']), reason: z.string() })
    .optional(),
  // `<captureId>.summary.json` beside the snapshot (per-class counts and self sizes), or why there is
  // none (key null, error): a summary that fails never fails the capture. Absent before summaries existed.
  summary: z
    .object({
      key: z.string().min(1).nullable(),
      nodeCount: bytes.optional(),
      totalSelfSize: z.number().nonnegative().optional(),
      classCount: bytes.optional(),
      error: z.object({ code: z.string(), message: z.string() }).optional(),
    })
    .optional(),
  // Whether heapcap opened the target's inspector (node-pid, SIGUSR1) and closed it again.
  // Absent in manifests written before it was recorded.
  inspector,
  // What was redacted before any byte was stored (the artifact's sha256 is of the redacted bytes):
  // mode `none`, or `strings` with the marker that replaced each value and the counts.
  // Absent in manifests written before redaction existed (nothing was redacted).
  redaction: z
    .object({
      mode: z.enum(['none', 'strings']),
      marker: z.string().optional(),
      redactedStrings: bytes.optional(),
      keptStrings: bytes.optional(),
      // Kept names rewritten without their values: DOM elements' opening tags (issue 41).
      rewrittenNames: bytes.optional(),
      redactedBytes: bytes.optional(),
    })
    .optional(),
});

/** A manifest (schemaVersion 1), as built and as parsed. */
export type CaptureManifest = z.infer<typeof CaptureManifestSchema>;

/**
 * The manifest of an allocation sampling profile (`kind: 'sampling-profile'`,
 * beside `<captureId>.heapprofile[.gz]`): no headroom gate, no warm, no summary.
 */
export const SamplingManifestSchema = z.looseObject({
  schemaVersion: z.literal(1),
  kind: z.literal('sampling-profile'),
  captureId: z.string().min(1),
  target,
  runtime,
  // samplingSeconds 0 and sampler `running`: a read of the sampler a continuous profile keeps on (its interval; allocations
  // since it started). `running` with seconds > 0: a one-off that found that sampler running and read it instead of its own.
  options: z.object({ gzip: z.boolean(), samplingSeconds: z.number().nonnegative(), samplingIntervalBytes: z.number().int().positive(), sampler: z.enum(['own', 'running']).optional() }),
  // Heap used and total when sampling started.
  heap: z.object({ usedBytes: bytes, totalBytes: bytes }),
  // Milliseconds from the monotonic clock; phases add up to `total`. `start`: HeapProfiler.enable + startSampling,
  // `sampling`: the requested duration, `stop`: stopSampling (the profile's transfer).
  timings: z.object({ connect: ms, preflight: ms, start: ms, sampling: ms, stop: ms, sink: ms, total: ms }),
  profile: z.object({ samples: bytes, nodes: bytes, sampledBytes: bytes, bytes }),
  artifact,
  trigger,
  selection,
  inspector,
  startedAt: z.iso.datetime({ offset: true }),
  finishedAt: z.iso.datetime({ offset: true }),
  heapcapVersion: z.string().min(1),
});
export type SamplingManifest = z.infer<typeof SamplingManifestSchema>;

/** Either manifest; `kind` tells them apart (absent: a snapshot). */
export type ArtifactManifest = CaptureManifest | SamplingManifest;

/** Parse a manifest of either kind (`kind: 'sampling-profile'` or a snapshot's). */
export function parseArtifactManifest(value: unknown): ArtifactManifest {
  const isSampling = typeof value === 'object' && value !== null && (value as { kind?: unknown }).kind === 'sampling-profile';
  return isSampling ? SamplingManifestSchema.parse(value) : CaptureManifestSchema.parse(value);
}

/**
 * The JSON text of `manifest` for `ref`, after checking it against the schema
 * and that it describes that capture; a store never writes a manifest that a
 * reader would reject. Throws `invalid_input` naming the bad fields.
 */
export function validManifest(ref: { captureId: string }, manifest: ArtifactManifest): string {
  // Once per capture: zod's compiled fast path would cost ~10 ms to build for one use (13-18 ms against 3.5 ms, first parse in a process).
  const once = { jitless: true };
  const parsed = manifest.kind === 'sampling-profile' ? SamplingManifestSchema.safeParse(manifest, once) : CaptureManifestSchema.safeParse(manifest, once);
  if (!parsed.success) {
    const fields = parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
    throw new CaptureError('invalid_input', `the manifest of ${ref.captureId} does not match its schema: ${fields}`, { hint: 'this is a bug in heapcap; please report it' });
  }
  if (parsed.data.captureId !== ref.captureId) {
    throw new CaptureError('invalid_input', `the manifest of ${parsed.data.captureId} was written for capture ${ref.captureId}`);
  }
  return `${JSON.stringify(manifest, null, 2)}\n`;
}
