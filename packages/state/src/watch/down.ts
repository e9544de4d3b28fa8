/** Why a target could not be sampled: what the console, `heapcap targets list` and /metrics say about a dead target. */
import { z } from 'zod';

/**
 * The short reason people read ("connection refused", "timed out", "not Node"), kept apart from the error's code
 * and message so a list can show it in a column.
 */
export const DOWN_REASONS = ['connection refused', 'timed out', 'not Node', 'closed', 'not found', 'other'] as const;
export type DownReason = (typeof DOWN_REASONS)[number];

/** A target whose last sample failed. Times are ms since the epoch (the watcher's clock). */
export const TargetDownSchema = z.strictObject({
  /** The first failed sample of this outage. */
  since: z.number().int(),
  /** The latest failed sample. */
  at: z.number().int(),
  reason: z.enum(DOWN_REASONS),
  /** The sampler's stable error code (target_unreachable, target_not_found, timeout, …). */
  code: z.string(),
  message: z.string(),
});
export type TargetDown = z.infer<typeof TargetDownSchema>;

/**
 * The reason of a failed sample, from the error's code and message (the capture engine's messages name the
 * socket's errno: "cannot reach an inspector at h:p (ECONNREFUSED)").
 */
export function downReason(code: string, message: string): DownReason {
  if (/ECONNREFUSED/.test(message)) return 'connection refused';
  if (code === 'protocol_timeout' || /ETIMEDOUT|did not answer .* within|timed out/i.test(message)) return 'timed out';
  if (code === 'target_not_node' || /not (?:a V8 inspector|Node\.js)|not answer like a V8 inspector/.test(message)) return 'not Node';
  if (code === 'target_closed' || /ECONNRESET/.test(message)) return 'closed';
  if (code === 'target_not_found') return 'not found';
  return 'other';
}
