/**
 * The summary of one heap snapshot (`<captureId>.summary.json`): counts, self
 * sizes and the per-class table, computed while the snapshot streams.
 */
import { z } from 'zod';

/** Bump when a field changes meaning; readers refuse versions they do not know. */
export const SUMMARY_SCHEMA_VERSION = 1;

/** One row of the per-class table. */
export const ClassRowSchema = z.object({
  /** Constructor name (object and native nodes) or parenthesised group, e.g. `(closure)`. */
  name: z.string(),
  /** Number of nodes of this class. */
  count: z.number().int().nonnegative(),
  /** Sum of their self sizes, bytes. */
  selfSize: z.number().nonnegative(),
});
export type ClassRow = z.infer<typeof ClassRowSchema>;

export const SummarySchema = z.object({
  schemaVersion: z.literal(SUMMARY_SCHEMA_VERSION),
  /** Bytes of snapshot JSON read (uncompressed). */
  snapshotBytes: z.number().int().nonnegative(),
  nodeCount: z.number().int().nonnegative(),
  edgeCount: z.number().int().nonnegative(),
  /** Sum of every node's self size, bytes. */
  totalSelfSize: z.number().nonnegative(),
  /** Every class, largest self size first (ties by name). Every node is in exactly one row. */
  classes: z.array(ClassRowSchema),
  /**
   * Native nodes whose own `detachedness` field says detached (Chromium: DOM
   * nodes not in a document). Null when the snapshot has no such field. Only
   * the state V8 recorded on each node: DevTools also propagates it to
   * connected native nodes, which needs the whole graph (see the analysis).
   */
  detached: z
    .object({
      count: z.number().int().nonnegative(),
      selfSize: z.number().nonnegative(),
      classes: z.array(ClassRowSchema),
    })
    .nullable(),
  /** Only with `largestStrings: N`: the N largest string nodes (strings can hold secrets). */
  largestStrings: z
    .array(
      z.object({
        selfSize: z.number().nonnegative(),
        /** The string as V8 recorded it (V8 keeps at most 1024 characters), cut to 200 characters here. */
        preview: z.string(),
        /** Length of the string V8 recorded (at most 1024). */
        length: z.number().int().nonnegative(),
      }),
    )
    .optional(),
});
export type Summary = z.infer<typeof SummarySchema>;

/** Options of the summarizer. */
export interface SummaryOptions {
  /** Report the N largest strings (off by default: strings are the most sensitive part of a heap). */
  largestStrings?: number;
}
