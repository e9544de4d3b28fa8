/** @heapcap/cli — the `heapcap` command and the capture runner it shares with the worker. */
export { runCapture, type RunCaptureInput, type RunCaptureOutput } from './run-capture.ts';
export { buildManifest, type CaptureManifestJson } from './manifest.ts';
export { EXIT, exitCodeFor } from './exit-codes.ts';
export { targetToEndpoint } from './targets-to-endpoint.ts';
export { triggerMain, parseTriggerArgs, TRIGGER_USAGE } from './trigger.ts';
export { statusMain, STATUS_USAGE } from './status.ts';
export type { CliIo } from './status-client.ts';
