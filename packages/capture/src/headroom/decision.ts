/**
 * The headroom gate: before anything heavy touches the target, estimate what
 * the snapshot will cost it and refuse when that does not fit. A snapshot of a
 * 300 MB heap makes the target's RSS grow by ~2.5 GB outside the JS heap (see
 * memory-model.ts); in a container with less room, the capture meant to
 * diagnose the service would get it OOM-killed.
 */
import { CaptureError } from '../errors.ts';
import { formatMiB } from '../units.ts';
import type { RuntimeFacts } from '../runtime.ts';
import type { MemoryFacts } from './facts.ts';
import { estimateExtraBytes, modelFor, type MemoryModel, type MemoryModelOverride } from './memory-model.ts';

/** Gate settings; per target in configuration. */
export interface HeadroomOptions {
  /** Take the snapshot even when it does not fit (recorded as forced). */
  force?: boolean;
  /** The target's memory limit when the target cannot tell (or a tighter budget than its cgroup). */
  memoryLimitBytes?: number;
  /** Memory that must stay free after the snapshot; default max(64 MiB, 10% of the limit). */
  marginBytes?: number;
  /** Replace the fitted model's coefficients for this target. */
  model?: MemoryModelOverride;
  /**
   * What an earlier capture of this target measured (the engine's `peak`): when
   * given, the estimate scales its extra-per-heap-byte to today's heap instead
   * of using the model, because the cost follows the heap's shape, which the
   * model cannot see (docs/headroom.md, "Heap shape").
   */
  previous?: PreviousCapture;
}

/** One earlier capture of the same target whose peak was measured. */
export interface PreviousCapture {
  heapUsedBytes: number;
  /** Measured extra RSS of that capture (`peak.actualExtraBytes`). */
  extraBytes: number;
}

/** Safety factor on a previous capture's ratio: the spread between two fresh processes of one shape (docs/headroom.md). */
export const PREVIOUS_CAPTURE_SAFETY = 1.15;

/** One limit the snapshot's extra memory must fit under. */
export interface HeadroomConstraint {
  source: 'cgroup' | 'constrained-memory' | 'configured' | 'host';
  limitBytes: number;
  /** Memory in use against that limit (cgroup: working set = usage − inactive file cache). */
  usageBytes: number;
  marginBytes: number;
  /** limit − usage − margin (may be negative). */
  availableBytes: number;
  /** Where the limit is set, for the message (a cgroup directory, "configured", …). */
  where: string;
}

/** The gate's estimate and verdict. */
export interface HeadroomReport {
  memory: MemoryFacts;
  heapUsedBytes: number;
  model: MemoryModel;
  /**
   * Extra resident memory the snapshot is expected to need, and the peak RSS that implies.
   * `source`: the model (heap used only), or an earlier capture of this target scaled to today's heap.
   */
  estimate: { extraBytes: number; peakBytes: number | null; source: 'model' | 'previous capture'; modelBytes: number; previousBytes: number | null };
  /** Every limit that applies; `binding` is the one with the least room. */
  constraints: HeadroomConstraint[];
  binding: HeadroomConstraint | null;
  /** `unknown`: no limit could be learnt, nothing to judge against. */
  verdict: 'fits' | 'exceeds' | 'unknown';
  /** True when the verdict was `exceeds` and the capture was taken anyway. */
  forced: boolean;
  action: 'capture' | 'refuse';
}

const MIN_MARGIN = 64 * 1024 * 1024;
const MARGIN_SHARE = 0.1;

function constraint(source: HeadroomConstraint['source'], limitBytes: number, usageBytes: number, where: string, marginOverride: number | undefined): HeadroomConstraint {
  const marginBytes = marginOverride ?? Math.max(MIN_MARGIN, Math.round(MARGIN_SHARE * limitBytes));
  return { source, limitBytes, usageBytes, marginBytes, availableBytes: limitBytes - usageBytes - marginBytes, where };
}

/** Every limit the facts reveal, with what is in use against each. */
export function headroomConstraints(facts: RuntimeFacts, memory: MemoryFacts, options: HeadroomOptions = {}): HeadroomConstraint[] {
  const out: HeadroomConstraint[] = [];
  const margin = options.marginBytes;
  const cg = memory.cgroup;
  if (cg !== null && cg.limitBytes !== null) {
    out.push(constraint('cgroup', cg.limitBytes, Math.max(cg.usageBytes - cg.inactiveFileBytes, 0), `cgroup v${cg.version} ${cg.limitDir ?? cg.dir}`, margin));
  } else if (cg === null && memory.constrainedMemoryBytes !== null) {
    // No cgroup files readable (another OS, or no fs in the target): libuv's view.
    const used = memory.availableMemoryBytes === null ? (memory.rssBytes ?? 0) : memory.constrainedMemoryBytes - memory.availableMemoryBytes;
    out.push(constraint('constrained-memory', memory.constrainedMemoryBytes, Math.max(used, 0), 'process.constrainedMemory()', margin));
  }
  if (options.memoryLimitBytes !== undefined) {
    // Chromium pages cannot see their renderer's RSS: the JS heap is a lower bound of it.
    const used = memory.rssBytes ?? facts.heap.totalBytes;
    out.push(constraint('configured', options.memoryLimitBytes, used, 'configured memory limit', margin));
  }
  if (memory.host !== null) {
    const { totalBytes, availableBytes } = memory.host;
    out.push(constraint('host', totalBytes, totalBytes - availableBytes, `host (${memory.host.source})`, margin));
  }
  return out;
}

/** Estimate the snapshot's cost and decide; pure (no I/O). */
export function decideHeadroom(facts: RuntimeFacts, memory: MemoryFacts, options: HeadroomOptions = {}): HeadroomReport {
  const model = modelFor(facts.product, facts.v8Version, options.model);
  const heapUsedBytes = facts.heap.usedBytes;
  const modelBytes = estimateExtraBytes(model, heapUsedBytes, memory.browser?.domNodes ?? 0);
  const previousBytes = previousEstimate(options.previous, heapUsedBytes);
  const extraBytes = previousBytes ?? modelBytes;
  const constraints = headroomConstraints(facts, memory, options);
  const binding = constraints.reduce<HeadroomConstraint | null>((min, c) => (min === null || c.availableBytes < min.availableBytes ? c : min), null);
  const verdict = binding === null ? 'unknown' : extraBytes > binding.availableBytes ? 'exceeds' : 'fits';
  const forced = verdict === 'exceeds' && options.force === true;
  return {
    memory,
    heapUsedBytes,
    model,
    estimate: {
      extraBytes,
      peakBytes: memory.rssBytes === null ? null : memory.rssBytes + extraBytes,
      source: previousBytes === null ? 'model' : 'previous capture',
      modelBytes,
      previousBytes,
    },
    constraints,
    binding,
    verdict,
    forced,
    action: verdict === 'exceeds' && !forced ? 'refuse' : 'capture',
  };
}

/**
 * An earlier capture's extra per heap byte, times today's heap, with a safety
 * factor; null when there is none usable (no heap, no measured extra).
 */
export function previousEstimate(previous: PreviousCapture | undefined, heapUsedBytes: number): number | null {
  if (previous === undefined || !(previous.heapUsedBytes > 0) || !(previous.extraBytes > 0)) return null;
  return Math.round((PREVIOUS_CAPTURE_SAFETY * previous.extraBytes * heapUsedBytes) / previous.heapUsedBytes);
}

/** Sizes in MiB, as every other size heapcap prints (units.ts). */
function mb(bytes: number): string {
  return formatMiB(bytes);
}

/** The `insufficient_headroom` error for a refused report, with the numbers and what to do. */
export function headroomError(report: HeadroomReport): CaptureError {
  const b = report.binding;
  if (b === null) throw new Error('headroomError needs a binding constraint');
  const needLimit = b.usageBytes + report.estimate.extraBytes + b.marginBytes;
  return new CaptureError(
    'insufficient_headroom',
    `the snapshot needs about ${mb(report.estimate.extraBytes)} more memory in the target (heap used ${mb(report.heapUsedBytes)}), ` +
      `but ${b.where} leaves ${mb(Math.max(b.availableBytes, 0))} (limit ${mb(b.limitBytes)}, in use ${mb(b.usageBytes)}, margin ${mb(b.marginBytes)})`,
    {
      hint: `raise the target's memory limit to at least ${mb(needLimit)}, capture a replica with more room, or force it (--force / force: true) at the risk of the target being OOM-killed`,
      details: {
        heapUsedBytes: report.heapUsedBytes,
        estimateBytes: report.estimate.extraBytes,
        estimatePeakBytes: report.estimate.peakBytes,
        limitBytes: b.limitBytes,
        usageBytes: b.usageBytes,
        marginBytes: b.marginBytes,
        availableBytes: b.availableBytes,
        constraint: b.source,
        where: b.where,
        model: report.model,
        requiredLimitBytes: needLimit,
      },
    },
  );
}
