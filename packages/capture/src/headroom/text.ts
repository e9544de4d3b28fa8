/**
 * The headroom facts and decision as short human lines, shared by the CLI's
 * `--dry-run` and anything that reports a refusal to people (Slack, logs).
 */
import { formatMiB } from '../units.ts';
import type { HeadroomReport } from './decision.ts';

/** Sizes in MiB, as every other size heapcap prints (units.ts); they were decimal MB beside the summary's MiB. */
function mb(bytes: number | null | undefined): string {
  return bytes === null || bytes === undefined ? '?' : formatMiB(bytes);
}

/** One line per fact, then the estimate, each limit, and the decision. */
export function headroomLines(r: HeadroomReport): string[] {
  const m = r.memory;
  const cg = m.cgroup;
  const dom = m.browser?.domNodes ?? 0;
  const lines = [
    `  heap used     ${mb(r.heapUsedBytes)}${m.heapLimitBytes === null ? '' : ` (V8 heap limit ${mb(m.heapLimitBytes)})`}`,
    ...(m.rssBytes === null ? [] : [`  rss           ${mb(m.rssBytes)} (peak so far ${mb(m.maxRssBytes)})`]),
    ...(cg === null
      ? []
      : [`  cgroup        v${cg.version} ${cg.path}: limit ${cg.limitBytes === null ? 'none' : mb(cg.limitBytes)}, usage ${mb(cg.usageBytes)} (inactive file ${mb(cg.inactiveFileBytes)})`]),
    ...(m.constrainedMemoryBytes === null ? [] : [`  constrained   ${mb(m.constrainedMemoryBytes)} (available ${mb(m.availableMemoryBytes)})`]),
    ...(m.host === null ? [] : [`  host          ${mb(m.host.availableBytes)} available of ${mb(m.host.totalBytes)} (${m.host.source})`]),
    `  facts via     ${m.access}`,
    `  estimate      +${mb(r.estimate.extraBytes)} during the snapshot (` +
      (r.estimate.source === 'previous capture'
        ? `scaled from this target's previous capture; the model ${r.model.family} says +${mb(r.estimate.modelBytes)})`
        : `${r.model.family}: ${r.model.factor} × heap + ${mb(r.model.constantBytes)})`) +
      (dom > 0 && r.model.perDomNodeBytes > 0 ? `, including ${mb(dom * r.model.perDomNodeBytes)} for ${dom} DOM nodes` : '') +
      (r.estimate.peakBytes === null ? '' : `, peak RSS ≈ ${mb(r.estimate.peakBytes)}`),
    ...r.constraints.map(
      (c) => `  limit         ${c.source}: ${mb(c.limitBytes)} − in use ${mb(c.usageBytes)} − margin ${mb(c.marginBytes)} = ${mb(c.availableBytes)} available${c === r.binding ? ' (binding)' : ''}`,
    ),
    `  decision      ${decisionText(r)}`,
    ...m.warnings.map((w) => `  note          ${w}`),
  ];
  return lines;
}

/** `capture (fits)`, `refuse (exceeds)`, `capture (forced: exceeds)`, `capture (no limit known)`. */
export function decisionText(r: HeadroomReport): string {
  if (r.verdict === 'unknown') return 'capture (no memory limit known: nothing to check against)';
  if (r.forced) return 'capture, forced (the estimate exceeds the available memory)';
  return r.action === 'refuse' ? 'refuse: insufficient_headroom (the estimate exceeds the available memory)' : 'capture (fits)';
}
