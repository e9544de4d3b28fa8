/** Snapshot redaction modes, shared by the env, the capture request and the target registry. */
import { z } from 'zod';

/**
 * `none`: the snapshot as V8 wrote it. `strings`: every string value replaced
 * (names of classes, properties, functions kept); docs/operations.md#redaction.
 */
export const RedactModeSchema = z.enum(['none', 'strings']);

export type RedactMode = z.infer<typeof RedactModeSchema>;

/**
 * The mode a capture runs with. A request may ask for more redaction, never
 * less: `strings` in the request always redacts; otherwise the target's
 * setting, and when the target says nothing, the service default
 * (HEAPCAP_REDACT). So a target registered with `redact: strings` is never
 * captured in the clear, whoever asks.
 */
export function resolveRedaction(request: RedactMode | undefined, target: RedactMode | undefined, service: RedactMode): RedactMode {
  if (request === 'strings') return 'strings';
  return target ?? service;
}
