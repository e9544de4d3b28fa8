/** The result of analysing one snapshot: retained sizes per class and the largest dominators with their retainer paths. */
import { z } from 'zod';
import { AllocatedAtSchema } from './allocation-site.ts';

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

/** What a unit's class is: an application constructor, a JavaScript built-in, or an engine internal. */
export const SuspectKindSchema = z.enum(['application', 'builtin', 'internal']);
export type SuspectKind = z.infer<typeof SuspectKindSchema>;

export const HolderSchema = z.object({
  /** Class of the holding node (`Map`, `Array`, `system / Context`, `global`, an application class). */
  class: z.string(),
  /** The reference that reaches the holder on the shortest path (`sessions`, `__leaks`, `data`); null when unnamed. */
  edge: z.string().nullable(),
  /** For a scope holder (a closure's Context, the global): the variable or property holding the unit. */
  via: z.string().nullable(),
  /** For a closure's Context: the holder of the closure that owns it (`handlers` (Array)), so a scope says who keeps it. */
  within: z
    .object({
      class: z.string(),
      edge: z.string().nullable(),
      /** True when the closure's holder is itself a variable of a scope: `class` is then that variable's name (`never`). */
      variable: z.boolean().optional(),
    })
    .nullable()
    .optional(),
  /** For a closure's Context holding the unit by a variable: a module's top-level scope or a function's. */
  scope: z.enum(['module', 'closure']).optional(),
  /** ... and the script declaring it, its last two path segments (`src/sessions.js`). */
  script: z.string().optional(),
  /** Class of the object that owns the holder (an `Order` owning its `items` Array); null when nothing does. */
  owner: z.string().nullable().optional(),
});
export type Holder = z.infer<typeof HolderSchema>;

/** One group of units of a snapshot: instances of a class held by the same kind of holder. */
export const SuspectGroupSchema = z.object({
  class: z.string(),
  kind: SuspectKindSchema,
  holder: HolderSchema.nullable(),
  count: z.number().int().nonnegative(),
  selfSize: z.number().nonnegative(),
  /** Self sizes of everything folded into the group's units (nested units not counted). */
  retainedSize: z.number().nonnegative(),
  /** Chromium: units holding detached DOM nodes (`trees`) and the detached native nodes folded into them (`nodes`); absent when none. */
  detached: z.object({ trees: z.number().int().nonnegative(), nodes: z.number().int().nonnegative() }).optional(),
  /** Root → … → holder → … → the group's largest unit; null when not recorded (small groups) or unreachable. */
  path: z.array(PathStepSchema).nullable(),
  /** Leak hunts that tracked allocations: where the group's counted units were allocated. */
  allocatedAt: AllocatedAtSchema.optional(),
});
export type SuspectGroup = z.infer<typeof SuspectGroupSchema>;

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
  /** Reachable nodes folded into their owners and grouped by (class, holder), largest first: what a diff's suspects compare. Absent in analyses made before suspects. */
  groups: z.array(SuspectGroupSchema).optional(),
  /** What the analysis needed in memory, measured from its typed arrays. */
  memory: z.object({
    bytesPerNode: z.number().nonnegative(),
    bytesPerEdge: z.number().nonnegative(),
    stringBytes: z.number().nonnegative(),
  }),
});
export type Analysis = z.infer<typeof AnalysisSchema>;
