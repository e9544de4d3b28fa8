/**
 * Worker affinity. A target may name a `placement` (a node name, a zone, a
 * host: any DNS-label-like string); its captures then go to a BullMQ queue of
 * that placement, which only workers started with it (or with `*`) consume.
 * Targets without a placement keep the one shared queue every worker consumes.
 *
 * A queue per placement (rather than routing inside one queue) because BullMQ
 * hands a waiting job to whichever worker asks first: it has no per-job
 * consumer filter. Separate queues keep BullMQ's locks, stalled-job recovery
 * and retries exactly as they are, and the unplaced queue keeps its old name,
 * so an upgrade leaves queued jobs where they are.
 */
import { z } from 'zod';

/** A placement: lower-case letters, digits, `.` and `-` (a Kubernetes node name fits), at most 253 characters. */
export const PlacementSchema = z
  .string()
  .regex(/^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$/, 'a placement: lower-case letters, digits, "." or "-", starting and ending with a letter or digit (e.g. a Kubernetes node name)');

/** What a worker consumes: `*` (every placement and the unplaced queue) or a list of placements (plus the unplaced queue). */
export const WorkerPlacementsSchema = z.union([z.literal('*'), z.array(PlacementSchema).min(1)]);
export type WorkerPlacements = z.infer<typeof WorkerPlacementsSchema>;

