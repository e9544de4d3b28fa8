/**
 * @heapcap/pipeline — the capture job: engine → store → manifest. One home for
 * what the CLI, the worker, and every trigger (schedules, watch rules, Slack)
 * run to take a capture.
 */
export { runCapture, type RunCaptureOutput } from './run-capture.ts';
export type { RunCaptureInput, RunSamplingInput, RunSnapshotInput } from './types.ts';
export { runSamplingCapture, type RunSamplingOutput } from './run-sampling.ts';
export { buildManifest, type CaptureManifestInput, type CaptureSummaryOutcome } from './manifest.ts';
