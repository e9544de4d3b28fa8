/**
 * The state of a target's continuous allocation profile, in Redis so that whoever holds the target next (after a
 * restart, a handover, a SIGKILL) knows when the sampler last ran (the gap it records) and when the last profile
 * was stored (the next is due `every` after it, not at once).
 */
import { z } from 'zod';

export const ProfileStateSchema = z.strictObject({
  /** The watcher whose session keeps the sampler on. */
  holder: z.string(),
  /** When that sampler started (allocations before it have no stack in its profiles). */
  startedAt: z.iso.datetime(),
  /** The last time the holder found its session open (the sampler running). */
  aliveAt: z.iso.datetime(),
  samplingIntervalBytes: z.number().int().positive(),
  /** The time before `startedAt` that no sampler ran (absent: the first start, or the gap was already reported). */
  gap: z.strictObject({ from: z.iso.datetime(), to: z.iso.datetime(), reason: z.string() }).optional(),
  /** When the last read was requested, and its capture (to see whether it found the sampler). */
  lastReadAt: z.iso.datetime().optional(),
  lastReadId: z.string().optional(),
});
export type ProfileState = z.infer<typeof ProfileStateSchema>;
