/**
 * Types shared by the capture job's files: run-capture.ts dispatches to
 * run-sampling.ts and both read the same input, so the input lives here and
 * neither imports the other for it.
 */
import type { SummaryOptions } from '@heapcap/analysis';
import type { CaptureProgress, EndpointSpec, SamplingProgress, SnapshotTransport, WarmMode } from '@heapcap/capture';
import type { ArtifactStore } from '@heapcap/storage';
import type { CaptureManifestInput } from './manifest.ts';

/** What one capture job takes: the target, the store, and the options of either kind. */
export interface RunCaptureInput {
  /** A heap snapshot (default) or an allocation sampling profile (run-sampling.ts). */
  kind?: 'snapshot' | 'sampling' | undefined;
  /** Sampling only: how long to sample (default 30). */
  samplingSeconds?: number | undefined;
  /** Sampling only: average bytes between samples (default V8's 32768). */
  samplingIntervalBytes?: number | undefined;
  captureId: string;
  targetId: string;
  endpoint: EndpointSpec;
  labels?: Record<string, string>;
  sink: ArtifactStore;
  gzip: boolean;
  warm: WarmMode;
  gc: boolean;
  exposeInternals?: boolean;
  captureNumericValue?: boolean;
  memoryCeilingBytes?: number;
  spillDir?: string | undefined;
  snapshotTimeoutMs?: number | undefined;
  /** How the snapshot bytes travel (default cdp); see @heapcap/capture's pipe transport. */
  transport?: SnapshotTransport | undefined;
  pipeDir?: string | undefined;
  /** Capture even when the headroom gate refuses. */
  force?: boolean;
  /** The target's configured memory limit. */
  memoryLimitBytes?: number | undefined;
  /** What the target's last measured capture cost (heap used, extra RSS): the gate scales it to today's heap. */
  headroomPrevious?: { heapUsedBytes: number; extraBytes: number } | undefined;
  trigger?: CaptureManifestInput['trigger'];
  /** Summarize the snapshot while it streams (default on); options such as `largestStrings`. */
  summary?: false | SummaryOptions;
  signal?: AbortSignal;
  onProgress?: (p: CaptureProgress | SamplingProgress) => void;
}
