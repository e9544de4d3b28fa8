/**
 * Diff of two summaries (and, where both captures were analysed, their
 * retained sizes): per-class deltas, largest self-size growth first, with new
 * and vanished classes.
 */
import { z } from 'zod';
import type { Summary } from './summary-schema.ts';
import type { Analysis } from './analysis-schema.ts';
import { ClassDeltaSchema, type SideSchema, type ClassDelta } from './class-delta.ts';
import { SuspectsSchema } from './suspects.ts';
import { graphSuspects, summarySuspects } from './suspect-report.ts';

export const DIFF_SCHEMA_VERSION = 1;

export { ClassDeltaSchema, type ClassDelta } from './class-delta.ts';

export const SummaryDiffSchema = z.object({
  schemaVersion: z.literal(DIFF_SCHEMA_VERSION),
  /** What to look at first: owners of new memory, from both dominator trees (`graph`) or, without both analyses, from class counts (`summary`). */
  suspects: SuspectsSchema,
  base: z.object({ nodeCount: z.number(), totalSelfSize: z.number() }),
  head: z.object({ nodeCount: z.number(), totalSelfSize: z.number() }),
  nodeCountDelta: z.number(),
  totalSelfSizeDelta: z.number(),
  /** True when both sides carried retained sizes. */
  retained: z.boolean(),
  /** Every class present on either side, largest self-size growth first (then count growth, then name). */
  classes: z.array(ClassDeltaSchema),
});
export type SummaryDiff = z.infer<typeof SummaryDiffSchema>;

/** One entry of a capture record's `growth`: a class that grew since the previous capture. */
export const GrowthEntrySchema = z.object({
  name: z.string(),
  countDelta: z.number(),
  selfSizeDelta: z.number(),
  retainedSizeDelta: z.number().optional(),
});
export type GrowthEntry = z.infer<typeof GrowthEntrySchema>;

/** Inputs of {@link diffSummaries} beyond the two summaries. */
export interface DiffOptions {
  baseAnalysis?: Analysis;
  headAnalysis?: Analysis;
  /** Why suspects are summary-only when they are (default: the analyses were not given). */
  summaryNote?: string;
}

/** The note of summary-only suspects when no reason is given. */
export const NO_ANALYSIS_NOTE = 'summary-only: both captures need an analysis for holders and retained sizes';

type Side = z.infer<typeof SideSchema>;

function sides(summary: Summary, analysis: Analysis | undefined): Map<string, Side> {
  const retained = new Map(analysis?.classes.map((c) => [c.name, c.retainedSize]));
  return new Map(
    summary.classes.map((c) => [c.name, analysis === undefined ? { count: c.count, selfSize: c.selfSize } : { count: c.count, selfSize: c.selfSize, retainedSize: retained.get(c.name) ?? 0 }]),
  );
}

/** Per-class deltas from `base` to `head`. */
export function diffSummaries(base: Summary, head: Summary, options: DiffOptions = {}): SummaryDiff {
  const withRetained = options.baseAnalysis !== undefined && options.headAnalysis !== undefined;
  const b = sides(base, withRetained ? options.baseAnalysis : undefined);
  const h = sides(head, withRetained ? options.headAnalysis : undefined);
  const names = new Set([...b.keys(), ...h.keys()]);
  const classes: ClassDelta[] = [];
  for (const name of names) {
    const from = b.get(name) ?? null;
    const to = h.get(name) ?? null;
    const countDelta = (to?.count ?? 0) - (from?.count ?? 0);
    const selfSizeDelta = (to?.selfSize ?? 0) - (from?.selfSize ?? 0);
    const status = from === null ? 'new' : to === null ? 'vanished' : selfSizeDelta > 0 || (selfSizeDelta === 0 && countDelta > 0) ? 'grown' : selfSizeDelta < 0 || countDelta < 0 ? 'shrunk' : 'unchanged';
    classes.push({
      name,
      status,
      base: from,
      head: to,
      countDelta,
      selfSizeDelta,
      ...(withRetained ? { retainedSizeDelta: (to?.retainedSize ?? 0) - (from?.retainedSize ?? 0) } : {}),
    });
  }
  classes.sort((x, y) => y.selfSizeDelta - x.selfSizeDelta || y.countDelta - x.countDelta || (x.name < y.name ? -1 : x.name > y.name ? 1 : 0));
  const bg = options.baseAnalysis?.groups;
  const hg = options.headAnalysis?.groups;
  const suspects =
    withRetained && bg !== undefined && hg !== undefined
      ? graphSuspects(bg, hg, { classes })
      : summarySuspects(classes, options.summaryNote ?? (withRetained ? 'summary-only: an analysis predates suspects; analyse the capture again for holders' : NO_ANALYSIS_NOTE));
  return {
    schemaVersion: DIFF_SCHEMA_VERSION,
    suspects,
    base: { nodeCount: base.nodeCount, totalSelfSize: base.totalSelfSize },
    head: { nodeCount: head.nodeCount, totalSelfSize: head.totalSelfSize },
    nodeCountDelta: head.nodeCount - base.nodeCount,
    totalSelfSizeDelta: head.totalSelfSize - base.totalSelfSize,
    retained: withRetained,
    classes,
  };
}

/** The `n` classes that grew most in self size (for a capture record's `growth` field). */
export function topGrowth(diff: SummaryDiff, n = 5): GrowthEntry[] {
  return diff.classes
    .filter((c) => c.selfSizeDelta > 0)
    .slice(0, n)
    .map((c) => ({
      name: c.name,
      countDelta: c.countDelta,
      selfSizeDelta: c.selfSizeDelta,
      // Only with both analyses: a growth entry without retained sizes has no such key (compared as written).
      ...(c.retainedSizeDelta === undefined ? {} : { retainedSizeDelta: c.retainedSizeDelta }),
    }));
}
