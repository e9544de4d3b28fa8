/** @heapcap/cli — the `heapcap` command and the capture runner it shares with the worker. */
export { runCapture, type RunCaptureInput, type RunCaptureOutput } from './run-capture.ts';
export { buildManifest, type CaptureManifestJson } from './manifest.ts';
export { EXIT, exitCodeFor } from './exit-codes.ts';
