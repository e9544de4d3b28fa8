/**
 * The three-snapshot technique over snapshots of one process: objects created
 * between `baseline` and `target` (ids absent from the baseline, present in
 * the target) that still live in `final` are the leak candidates. They are
 * reported twice: as `suspects`, folded into their owners and grouped by
 * holder with the diff's ranking (suspects.ts), and as `classes`, per class,
 * each with the retainer path of its largest instance.
 *
 * Node ids are V8's heap profiler object ids: stable across snapshots of one
 * process only while the profiler's id map is kept (see docs/inspector-facts.md
 * for what clears it). A hunt over snapshots whose ids were cleared in between
 * is refused rather than reported wrongly.
 */
import { z } from 'zod';
import { CaptureError } from '@heapcap/errors';
import { loadSnapshotGraph } from './analyze.ts';
import { computeDominators } from './dominators.ts';
import { classify } from './classes.ts';
import { findId, idAgreement, readNodeIds, signature, signatureOf, type NodeIdSet } from './node-ids.ts';
import { retainerPath, shortestPathTree } from './paths.ts';
import { PathStepSchema } from './analysis-schema.ts';
import { sortRows } from './summarizer.ts';
import { suspectGroups, SuspectsSchema, type Suspects } from './suspects.ts';
import type { SuspectGroup } from './analysis-schema.ts';
import { AllocatedAtBuilder } from './allocation-site.ts';
import { graphSuspects } from './suspect-report.ts';

export const LEAK_HUNT_SCHEMA_VERSION = 1;

export const LeakClassSchema = z.object({
  name: z.string(),
  /** Instances created between baseline and target that are still alive in final. */
  count: z.number().int().nonnegative(),
  selfSize: z.number().nonnegative(),
  /** The largest surviving instance (by retained size) and its retainer path in `final`. */
  representative: z.object({
    id: z.number().int().nonnegative(),
    retainedSize: z.number().nonnegative(),
    path: z.array(PathStepSchema).nullable(),
  }),
});
export type LeakClass = z.infer<typeof LeakClassSchema>;

export const LeakHuntSchema = z.object({
  schemaVersion: z.literal(LEAK_HUNT_SCHEMA_VERSION),
  /**
   * What to look at first: the surviving new objects folded into their owners
   * and grouped by (class, holder) exactly as a diff's suspects are, ranked by
   * the memory they hold. Absent in reports made before suspects.
   */
  suspects: SuspectsSchema.optional(),
  /**
   * How many times the drive ran between baseline and target (one more round
   * ran before final); null without a drive. With rounds, a suspect grew in
   * proportion to them and in the extra round; without, `note` says a
   * replaced buffer cannot be told from a leak.
   */
  rounds: z.number().int().positive().nullable().optional(),
  /** What the report cannot tell (a hunt without a drive). */
  note: z.string().optional(),
  /** Objects created between baseline and target (present in target, absent from baseline). */
  createdCount: z.number().int().nonnegative(),
  /** Of those, the ones still alive in final. */
  survivingCount: z.number().int().nonnegative(),
  survivingSelfSize: z.number().nonnegative(),
  /** Classes of the surviving objects, largest self size first. */
  classes: z.array(LeakClassSchema),
  /**
   * Whether the target snapshot carried V8's allocation stacks (the hunt
   * tracked allocations between baseline and target): then each suspect part
   * has `allocatedAt`; `withStack` of the `instances` counted had a stack.
   * Absent in reports made before allocation tracking.
   */
  allocations: z.object({ tracked: z.boolean(), instances: z.number().int().nonnegative(), withStack: z.number().int().nonnegative() }).optional(),
});
export type LeakHunt = z.infer<typeof LeakHuntSchema>;

/** Options of {@link leakHunt}. */
export interface LeakHuntOptions {
  /** Per file, as for the analysis (`analysis_too_large` above it). */
  maxBytes: number;
  /** How many classes to report (default 20). */
  top?: number;
  /** Rounds of the drive between baseline and target (one more ran before final); undefined: the hunt had no drive. */
  rounds?: number | undefined;
}

/** The note of a hunt without a drive. */
export const NO_DRIVE_NOTE = 'no drive: the hunt cannot tell a buffer the target replaces from a leak (both are alive in the final snapshot); give it a drive with rounds to repeat the action';

/**
 * Below this share of matching signatures the ids were reassigned between two
 * snapshots. Measured (docs/inspector-facts.md): 99.8-100% when kept (idle
 * targets; a busy heap changes more objects), 27-66% after a clear. 80%
 * leaves room on both sides.
 */
const MIN_ID_AGREEMENT = 0.8;

/** Fails when too few of the ids two snapshots share name the same kind of object. */
function checkAgreement(common: number, agreeing: number, what: string): void {
  const share = common === 0 ? 0 : agreeing / common;
  if (share < MIN_ID_AGREEMENT) {
    throw new CaptureError('invalid_input', `the ${what} snapshots do not share object ids (${(share * 100).toFixed(1)}% of ${common} common ids name the same kind of object)`, {
      hint: 'the three snapshots must come from one process, with its heap profiler ids kept between them: take them in one inspector session without HeapProfiler.disable in between (see docs/inspector-facts.md)',
      details: { common, agreeing },
    });
  }
}

function checkIds(earlier: NodeIdSet, later: NodeIdSet, what: string): void {
  const { common, agreeing } = idAgreement(earlier, later);
  checkAgreement(common, agreeing, what);
}

/** Runs the three-snapshot technique over `baseline`, `target` and `final` (files of one process, in that order). */
export async function leakHunt(baseline: string, target: string, final: string, options: LeakHuntOptions): Promise<LeakHunt> {
  const baseIds = await readNodeIds(baseline, options.maxBytes);
  const targetIds = await readNodeIds(target, options.maxBytes, { trace: true });
  checkIds(baseIds, targetIds, 'baseline and target');
  const graph = await loadSnapshotGraph(final, options.maxBytes);

  let createdCount = 0;
  for (const key of targetIds.keys) if (findId(baseIds, Math.floor(key / 65536)) < 0) createdCount++;

  const { dominator, retained } = computeDominators(graph);
  // The surviving new objects: what the suspects count.
  const counted = new Uint8Array(graph.nodeCount);
  const classes = classify(graph);
  const synthetic = graph.layout.nodeTypes.indexOf('synthetic');
  const perClass = new Map<number, { count: number; selfSize: number; best: number }>();
  let common = 0;
  let agreeing = 0;
  let survivingCount = 0;
  let survivingSelfSize = 0;
  // With rounds: the objects the extra round made (absent from target) that live in final, grouped as the suspects are.
  const extra = options.rounds === undefined ? undefined : new Uint8Array(graph.nodeCount);
  for (let i = 0; i < graph.nodeCount; i++) {
    const id = graph.nodeId[i] as number;
    const inTarget = findId(targetIds, id);
    if (inTarget < 0) {
      if (extra !== undefined && graph.nodeType[i] !== synthetic) extra[i] = 1;
      continue;
    }
    common++;
    if (signature(inTarget) === signatureOf(graph.nodeType[i] as number, graph.selfSize[i] as number, (graph.firstEdge[i + 1] as number) - (graph.firstEdge[i] as number))) agreeing++;
    if (graph.nodeType[i] === synthetic || findId(baseIds, id) >= 0) continue;
    survivingCount++;
    counted[i] = 1;
    survivingSelfSize += graph.selfSize[i] as number;
    const c = classes.classOf[i] as number;
    const row = perClass.get(c) ?? { count: 0, selfSize: 0, best: i };
    row.count++;
    row.selfSize += graph.selfSize[i] as number;
    if ((retained[i] as number) > (retained[row.best] as number)) row.best = i;
    perClass.set(c, row);
  }
  checkAgreement(common, agreeing, 'target and final');

  const parentEdge = shortestPathTree(graph);
  const rounds = options.rounds === undefined || extra === undefined ? undefined : { count: options.rounds, extra: suspectGroups(graph, dominator, parentEdge, { counted: extra, paths: 0 }) };
  // With the target snapshot's allocation stacks: each counted unit's stack, by its group.
  const trace = targetIds.trace;
  const sites = new Map<SuspectGroup, AllocatedAtBuilder>();
  const onUnit =
    trace === undefined
      ? undefined
      : (group: SuspectGroup, unit: number): void => {
          let b = sites.get(group);
          if (b === undefined) sites.set(group, (b = new AllocatedAtBuilder()));
          b.add(trace.stackOf(graph.nodeId[unit] as number), graph.selfSize[unit] as number);
        };
  const groups = suspectGroups(graph, dominator, parentEdge, { counted, paths: 50, onUnit });
  let allocations: LeakHunt['allocations'] = { tracked: false, instances: 0, withStack: 0 };
  if (trace !== undefined) {
    allocations = { tracked: true, instances: 0, withStack: 0 };
    for (const [group, b] of sites) {
      group.allocatedAt = b.finish();
      allocations.instances += group.allocatedAt.instances;
      allocations.withStack += group.allocatedAt.withStack;
    }
  }
  const suspects: Suspects = graphSuspects([], groups, { rounds });
  const rows = sortRows([...perClass].map(([c, r]) => ({ name: classes.names[c] as string, ...r }))).slice(0, options.top ?? 20);
  return {
    schemaVersion: LEAK_HUNT_SCHEMA_VERSION,
    suspects,
    rounds: options.rounds ?? null,
    ...(options.rounds === undefined ? { note: NO_DRIVE_NOTE } : {}),
    createdCount,
    survivingCount,
    survivingSelfSize,
    allocations,
    classes: rows.map((r) => ({
      name: r.name,
      count: r.count,
      selfSize: r.selfSize,
      representative: {
        id: graph.nodeId[r.best] as number,
        retainedSize: retained[r.best] as number,
        path: retainerPath(graph, parentEdge, r.best) ?? null,
      },
    })),
  };
}
