/** @heapcap/state/retention — Retention: the janitor that expires artifacts, and pins. */
export { Janitor, type ArtifactRemover, type JanitorLog, type JanitorOptions, type JanitorReport, type RetentionDefaults, type ExpireReason } from './janitor.ts';
export type { PinOutcome } from './pins.ts';
