/**
 * What heapcap says about a V8 SamplingHeapProfile (`.heapprofile`): live
 * bytes by allocation site and the top stacks (`summarizeProfile`), and the
 * growth between two profiles by site (`diffProfiles`).
 */
import { z } from 'zod';

/** Bump when a field changes meaning; readers refuse versions they do not know. */
export const PROFILE_SUMMARY_SCHEMA_VERSION = 1;

/**
 * One frame: the function V8 names (V8's stacks name functions, not
 * statements), its script and the position of the function, 1-based
 * (V8's 0-based lineNumber/columnNumber plus one; 0 when V8 gives none).
 */
export const ProfileFrameSchema = z.object({
  functionName: z.string(),
  url: z.string(),
  line: z.number().int().nonnegative(),
  column: z.number().int().nonnegative(),
});
export type ProfileFrame = z.infer<typeof ProfileFrameSchema>;

/** An allocation site: the innermost frame that is not Node's own (`node:`) or a builtin without a script. */
export const AllocationSiteSchema = ProfileFrameSchema.extend({
  /** Live bytes V8 attributes to the site (sampled allocations scaled to the interval). */
  bytes: z.number().nonnegative(),
  /** Sampled allocations still alive. */
  samples: z.number().int().nonnegative(),
  /** Estimated live objects (each sample scaled by the sampling interval; samples when the interval is unknown). */
  objects: z.number().int().nonnegative(),
});
export type AllocationSite = z.infer<typeof AllocationSiteSchema>;

/** A folded stack, allocation site first. */
export const ProfileStackSchema = z.object({
  frames: z.array(ProfileFrameSchema),
  bytes: z.number().nonnegative(),
  samples: z.number().int().nonnegative(),
});
export type ProfileStack = z.infer<typeof ProfileStackSchema>;

export const ProfileSummarySchema = z.object({
  schemaVersion: z.literal(PROFILE_SUMMARY_SCHEMA_VERSION),
  /** Sampled allocations still alive when the profile was taken. */
  samples: z.number().int().nonnegative(),
  /** Their bytes, scaled (the sum of every node's selfSize). */
  totalBytes: z.number().nonnegative(),
  /** Call-tree nodes. */
  nodes: z.number().int().nonnegative(),
  /** The interval the estimate of objects used, bytes; null when unknown (objects are then samples). */
  samplingIntervalBytes: z.number().int().positive().nullable(),
  /** Allocation sites, most live bytes first (then name, url, line, column); at most `limit`. */
  sites: z.array(AllocationSiteSchema),
  /** Sites left out by the limit. */
  sitesOmitted: z.number().int().nonnegative(),
  /** Folded stacks, most live bytes first; at most `stackLimit`. */
  stacks: z.array(ProfileStackSchema),
});
export type ProfileSummary = z.infer<typeof ProfileSummarySchema>;

/** One site's change between two profiles. */
export const SiteDeltaSchema = ProfileFrameSchema.extend({
  baseBytes: z.number().nonnegative(),
  headBytes: z.number().nonnegative(),
  bytesDelta: z.number(),
  baseSamples: z.number().int().nonnegative(),
  headSamples: z.number().int().nonnegative(),
});
export type SiteDelta = z.infer<typeof SiteDeltaSchema>;

export const ProfileDiffSchema = z.object({
  schemaVersion: z.literal(PROFILE_SUMMARY_SCHEMA_VERSION),
  base: z.object({ samples: z.number().int().nonnegative(), totalBytes: z.number().nonnegative() }),
  head: z.object({ samples: z.number().int().nonnegative(), totalBytes: z.number().nonnegative() }),
  totalBytesDelta: z.number(),
  /** Sites whose live bytes grew, most growth first; at most `limit`. */
  grown: z.array(SiteDeltaSchema),
  /** Sites whose live bytes shrank, most shrinkage first; at most `limit`. */
  shrunk: z.array(SiteDeltaSchema),
});
export type ProfileDiff = z.infer<typeof ProfileDiffSchema>;
