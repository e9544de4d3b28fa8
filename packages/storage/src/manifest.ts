/**
 * The manifest written beside each snapshot (`<captureId>.manifest.json`):
 * what was captured, from where, how, how long each phase took, and what was
 * stored. Objects are loose (unknown keys kept) where later issues add fields,
 * so an older reader never rejects a newer manifest.
 */
import { z } from 'zod';

const ms = z.number().nonnegative();
const bytes = z.number().int().nonnegative();

/** Schema of manifest JSON, schemaVersion 1. */
export const CaptureManifestSchema = z.looseObject({
  schemaVersion: z.literal(1),
  captureId: z.string().min(1),
  target: z.looseObject({
    id: z.string().min(1),
    kind: z.enum(['node', 'node-pid', 'chromium']),
    endpoint: z.string(),
    labels: z.record(z.string(), z.string()),
  }),
  runtime: z.looseObject({
    product: z.enum(['node', 'chromium']),
    version: z.string(),
    // null when the target would not say (the engine then warms to be safe).
    v8Version: z.string().nullable(),
  }),
  options: z.looseObject({
    warm: z.enum(['auto', 'always', 'never']),
    gc: z.boolean(),
    gzip: z.boolean(),
    exposeInternals: z.boolean().optional(),
    captureNumericValue: z.boolean().optional(),
    treatGlobalObjectsAsRoots: z.boolean().optional(),
  }),
  warm: z.looseObject({
    decision: z.enum(['warmed', 'skipped']),
    reason: z.string(),
    method: z.string().optional(),
    durationMs: ms.optional(),
  }),
  heap: z.looseObject({ usedBytes: bytes, totalBytes: bytes }),
  // Milliseconds from the worker's monotonic clock; phases add up to `total`.
  timings: z.looseObject({
    connect: ms,
    preflight: ms,
    warm: ms,
    // HeapProfiler.enable. Absent in manifests written before it had a phase of its
    // own: there `gc` includes it (2-17 ms) even when no GC was asked for.
    enable: ms.optional(),
    gc: ms,
    generate: ms,
    serialize: ms,
    sink: ms,
    total: ms,
  }),
  artifact: z.looseObject({
    key: z.string().min(1),
    location: z.string().min(1),
    bytesUncompressed: bytes,
    bytesStored: bytes,
    sha256: z.string().regex(/^[0-9a-f]{64}$/),
    gzip: z.boolean(),
    contentType: z.string(),
  }),
  // null when the snapshot's header could not be read.
  snapshot: z
    .looseObject({
      nodeCount: bytes,
      edgeCount: bytes,
      traceFunctionCount: bytes.optional(),
      nodeFields: z.array(z.string()),
      edgeFields: z.array(z.string()),
    })
    .nullable(),
  trigger: z.looseObject({ kind: z.string().min(1), who: z.string(), reason: z.string().optional() }).optional(),
  startedAt: z.iso.datetime({ offset: true }),
  finishedAt: z.iso.datetime({ offset: true }),
  heapcapVersion: z.string().min(1),
  // Filled by a later issue (headroom and other preflight facts).
  preflight: z.record(z.string(), z.unknown()).optional(),
  // Chromium: how many targets the selector matched, how it picked, which one was taken.
  selection: z
    .looseObject({
      matches: z.number().int().positive(),
      pick: z.enum(['only', 'first']),
      taken: z.looseObject({ type: z.string(), title: z.string(), url: z.string() }),
    })
    .optional(),
  // Whether heapcap opened the target's inspector (node-pid, SIGUSR1) and closed it again.
  // Absent in manifests written before it was recorded.
  inspector: z
    .looseObject({
      openedByHeapcap: z.boolean(),
      closed: z.boolean(),
      address: z.string().optional(),
      note: z.string().optional(),
    })
    .optional(),
});

/** A parsed manifest (schemaVersion 1). */
export type CaptureManifest = z.infer<typeof CaptureManifestSchema>;
