/** Human output of the CLI: sizes, the final table (the progress line: progress.ts). */
import type { InspectorRelease, PhaseTimings } from '@heapcap/capture';
import { formatMiB, PHASES, SAMPLING_PHASES } from '@heapcap/capture';
import type { CaptureManifest, SamplingManifest } from '@heapcap/storage/file';
import { redactionText } from './status-format.ts';

/** The first lines of both tables: what was captured, its heap, which browser target. */
function headLines(m: CaptureManifest | SamplingManifest, what: string): string[] {
  return [
    `${what} ${m.target.endpoint} (${m.runtime.product} ${m.runtime.version}, V8 ${m.runtime.v8Version ?? '?'})`,
    // The heap total is what V8 has reserved now, not a limit: "3.1 MiB of 4.0 MiB" read as one.
    `  heap used  ${formatMiB(m.heap.usedBytes)} (heap total ${formatMiB(m.heap.totalBytes)})`,
    ...(m.selection === undefined ? [] : [`  selected   ${selectionText(m.selection)}`]),
  ];
}

/** The phase table: one line per phase, then the total. */
function phaseLines(t: Record<string, number> & { total: number }, phases: readonly string[]): string[] {
  return ['  phase          ms', ...phases.map((p) => `  ${p.padEnd(10)} ${(t[p] ?? 0).toFixed(1).padStart(10)}`), `  ${'total'.padEnd(10)} ${t.total.toFixed(1).padStart(10)}`];
}

/** The summary printed after a successful sampling profile. */
export function samplingTable(m: SamplingManifest, manifestLocation: string): string {
  const p = m.profile;
  return [
    ...headLines(m, `sampled allocations of`),
    `  sampling   ${m.options.samplingSeconds} s, one sample per ${m.options.samplingIntervalBytes} bytes allocated (on average)`,
    '',
    ...phaseLines(m.timings, SAMPLING_PHASES),
    '',
    `  profile    ${p.samples} samples still alive at the stop (${formatMiB(p.sampledBytes)}), ${p.nodes} call-tree nodes; ${kib(m.artifact.bytesUncompressed)}${m.artifact.gzip ? ` → ${kib(m.artifact.bytesStored)} gzip` : ''}`,
    ...(m.inspector?.openedByHeapcap === true ? [`  inspector  ${inspectorText(m.inspector)}`] : []),
    `  sha256     ${m.artifact.sha256}`,
    `  artifact   ${m.artifact.location}  (Chrome DevTools → Memory → Load${m.artifact.gzip ? ', after gunzip' : ''})`,
    `  manifest   ${manifestLocation}`,
  ].join('\n');
}

/** Bytes in KiB: a profile is kilobytes where a snapshot is megabytes. */
function kib(bytes: number): string {
  return `${(bytes / 1024).toFixed(1)} KiB`;
}

/** The summary printed after a successful capture. */
export function summaryTable(m: CaptureManifest, manifestLocation: string): string {
  const t: PhaseTimings = m.timings;
  const lines = [
    ...headLines(m, 'captured'),
    `  warm       ${m.warm.decision}${m.warm.method === undefined ? '' : ` (${m.warm.method}, ${m.warm.durationMs ?? 0} ms)`}: ${m.warm.reason}`,
    '',
    ...phaseLines(t, PHASES),
    '',
    `  snapshot   ${formatMiB(m.artifact.bytesUncompressed)}${m.artifact.gzip ? ` → ${formatMiB(m.artifact.bytesStored)} gzip` : ''}, ${m.snapshot?.nodeCount ?? '?'} nodes, ${m.snapshot?.edgeCount ?? '?'} edges`,
    ...(m.inspector?.openedByHeapcap === true ? [`  inspector  ${inspectorText(m.inspector)}`] : []),
    ...(m.redaction?.mode === 'strings' ? [`  redact     ${redactionText(m.redaction)}`] : []),
    `  sha256     ${m.artifact.sha256}`,
    `  artifact   ${m.artifact.location}`,
    `  manifest   ${manifestLocation}`,
  ];
  return lines.join('\n');
}

/** What became of an inspector heapcap opened with SIGUSR1 (node-pid). */
export function inspectorText(r: InspectorRelease): string {
  return r.closed
    ? `opened on ${r.address ?? '?'} for the capture (SIGUSR1), closed again`
    : `opened on ${r.address ?? '?'} for the capture (SIGUSR1) and STILL LISTENING${r.note === undefined ? '' : `: ${r.note}`}`;
}

/** Which browser target was captured, and out of how many matches. */
function selectionText(s: NonNullable<CaptureManifest['selection']>): string {
  const which = s.matches === 1 ? 'the only match' : `the first of ${s.matches} matches (--pick first)`;
  return `${s.taken.type} "${s.taken.title}" ${s.taken.url}: ${which}`;
}
