/**
 * Types shared by the capture job's files: run-capture.ts dispatches to
 * run-sampling.ts and both read the same input, so the input lives here and
 * neither imports the other for it.
 */
import type { RedactMode, SummaryOptions } from '@heapcap/analysis';
import type { CaptureOptions, SamplingOptions } from '@heapcap/capture';
import type { ArtifactStore } from '@heapcap/storage';
import type { CaptureManifestInput } from './manifest.ts';

/** What every capture job carries, whatever it takes. */
interface RunCaptureCommon {
  ids: { captureId: string; targetId: string };
  /** Where the artifact, its summary and its manifest go. */
  store: ArtifactStore;
  gzip: boolean;
  labels?: Record<string, string> | undefined;
  trigger?: CaptureManifestInput['trigger'];
}

/** A heap snapshot. */
export interface RunSnapshotInput extends RunCaptureCommon {
  kind: 'snapshot';
  /**
   * The engine's options, built once by the caller and handed to
   * captureHeapSnapshot as they are; the pipeline adds only its own
   * `beforeSnapshot` (the store check). Its `signal` cancels the upload too.
   */
  capture: Omit<CaptureOptions, 'beforeSnapshot'>;
  /** Summarize the snapshot while it streams (default on); options such as `largestStrings`. */
  summary?: false | SummaryOptions | undefined;
  /**
   * `strings`: replace every string value in the stream, before the spill
   * buffer, the summary and the store see a byte (default `none`).
   */
  redact?: RedactMode | undefined;
  /**
   * Called once the artifact is stored, as the pipeline writes its summary and
   * then its manifest: the engine's last phase (`sink`) is over by then.
   */
  onSummary?: (() => void) | undefined;
}

/** An allocation sampling profile (run-sampling.ts). */
export interface RunSamplingInput extends RunCaptureCommon {
  kind: 'sampling';
  /** The engine's options, as for `capture`; `durationMs` in whole seconds (the manifest records seconds). */
  sampling: Omit<SamplingOptions, 'beforeSampling'>;
}

/** What one capture job takes: the ids, the store, and the engine's options of either kind. */
export type RunCaptureInput = RunSnapshotInput | RunSamplingInput;
