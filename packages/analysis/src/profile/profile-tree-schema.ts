/**
 * The folded call tree of a sampling heap profile, for flame graphs: the same
 * folding as the summary (Node's `node:` frames and script-less builtins fold
 * into their caller), so a leaf's self bytes are its allocation site's bytes.
 * Flat (nodes in pre-order with their parent's index) so that the schema is
 * not recursive and a deep stack is not a deep JSON document.
 */
import { z } from 'zod';
import { PROFILE_SUMMARY_SCHEMA_VERSION, ProfileFrameSchema } from './profile-schema.ts';

/** One node of the folded tree: a frame under its parent's frame. */
export const ProfileTreeNodeSchema = z.object({
  /** Index into `frames`; null for the root (the whole profile). */
  frame: z.number().int().nonnegative().nullable(),
  /** Index of the parent node; -1 for the root (index 0). */
  parent: z.number().int().min(-1),
  /** Live bytes allocated by this frame itself (it is their allocation site). */
  selfBytes: z.number().nonnegative(),
  /** Live bytes allocated by this frame and everything it called. */
  totalBytes: z.number().nonnegative(),
  selfSamples: z.number().int().nonnegative(),
  totalSamples: z.number().int().nonnegative(),
  /** Estimated live objects (scaled by the sampling interval; samples when it is unknown). */
  selfObjects: z.number().int().nonnegative(),
  totalObjects: z.number().int().nonnegative(),
});
export type ProfileTreeNode = z.infer<typeof ProfileTreeNodeSchema>;

export const ProfileTreeSchema = z.object({
  schemaVersion: z.literal(PROFILE_SUMMARY_SCHEMA_VERSION),
  samples: z.number().int().nonnegative(),
  totalBytes: z.number().nonnegative(),
  samplingIntervalBytes: z.number().int().positive().nullable(),
  /** The distinct frames the nodes name. */
  frames: z.array(ProfileFrameSchema),
  /** Pre-order: a parent before its children, children most total bytes first. */
  nodes: z.array(ProfileTreeNodeSchema),
});
export type ProfileTree = z.infer<typeof ProfileTreeSchema>;

/** A node of the growth tree: the head's totals and the base's for the same folded path. */
export const ProfileTreeDiffNodeSchema = ProfileTreeNodeSchema.extend({
  baseSelfBytes: z.number().nonnegative(),
  baseTotalBytes: z.number().nonnegative(),
  baseSelfSamples: z.number().int().nonnegative(),
  baseTotalSamples: z.number().int().nonnegative(),
});
export type ProfileTreeDiffNode = z.infer<typeof ProfileTreeDiffNodeSchema>;

/** The union of two profiles' folded trees (a path in either side is a node; the other side's totals are 0). */
export const ProfileTreeDiffSchema = ProfileTreeSchema.extend({
  base: z.object({ samples: z.number().int().nonnegative(), totalBytes: z.number().nonnegative() }),
  nodes: z.array(ProfileTreeDiffNodeSchema),
});
export type ProfileTreeDiff = z.infer<typeof ProfileTreeDiffSchema>;
