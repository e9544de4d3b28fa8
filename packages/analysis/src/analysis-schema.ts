/** The result of analysing one snapshot: retained sizes per class and the largest dominators with their retainer paths. */
import { z } from 'zod';

export const ANALYSIS_SCHEMA_VERSION = 1;

export const PathStepSchema = z.object({
  edge: z.string(),
  edgeType: z.string(),
  id: z.number().int().nonnegative(),
  class: z.string(),
  name: z.string().optional(),
});

export const AnalysisClassSchema = z.object({
  name: z.string(),
  count: z.number().int().nonnegative(),
  selfSize: z.number().nonnegative(),
  /** DevTools' class retained size: instances dominated by another instance of the class are not counted again. */
  retainedSize: z.number().nonnegative(),
});
export type AnalysisClass = z.infer<typeof AnalysisClassSchema>;

export const DominatorSchema = z.object({
  id: z.number().int().nonnegative(),
  class: z.string(),
  selfSize: z.number().nonnegative(),
  retainedSize: z.number().nonnegative(),
  /** Root → … → this node; null when only weak or internal references reach it. */
  path: z.array(PathStepSchema).nullable(),
});
export type DominatorEntry = z.infer<typeof DominatorSchema>;

export const AnalysisSchema = z.object({
  schemaVersion: z.literal(ANALYSIS_SCHEMA_VERSION),
  snapshotBytes: z.number().int().nonnegative(),
  nodeCount: z.number().int().nonnegative(),
  edgeCount: z.number().int().nonnegative(),
  totalSelfSize: z.number().nonnegative(),
  /** Every class, largest retained size first. Same names as the summary's classes. */
  classes: z.array(AnalysisClassSchema),
  /** The largest dominators (nodes other than synthetic roots), largest retained size first. */
  dominators: z.array(DominatorSchema),
  /** Detached DOM nodes after DevTools' propagation of the state to connected native nodes; null without the field. */
  detached: z
    .object({
      count: z.number().int().nonnegative(),
      selfSize: z.number().nonnegative(),
      classes: z.array(z.object({ name: z.string(), count: z.number().int().nonnegative(), selfSize: z.number().nonnegative() })),
    })
    .nullable(),
  /** What the analysis needed in memory, measured from its typed arrays. */
  memory: z.object({
    bytesPerNode: z.number().nonnegative(),
    bytesPerEdge: z.number().nonnegative(),
    stringBytes: z.number().nonnegative(),
  }),
});
export type Analysis = z.infer<typeof AnalysisSchema>;
