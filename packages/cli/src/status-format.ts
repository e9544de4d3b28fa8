/** Human-readable lines for a capture record (`heapcap trigger` and `heapcap status`). */
import { formatMiB } from '@heapcap/capture';
import { failedAttemptText } from './progress.ts';

interface RecordView {
  id: string;
  targetId: string;
  status: string;
  phase?: string | null;
  attempts?: number;
  failedAttempts?: { attempt: number; of: number; code: string; message: string; nextAttemptAt: string | null }[];
  coalesced?: number;
  error?: { code: string; message: string; hint?: string } | null;
  timings?: Record<string, number> | null;
  artifact?: { location: string; bytesStored: number; kind?: string } | null;
  redaction?: { mode: string; redactedStrings?: number; rewrittenNames?: number };
  createdAt?: string;
  finishedAt?: string | null;
}

/** The mode a snapshot was stored with (the effective one: the target's `strings` wins over a request's `none`), with its counts. */
export function redactionText(r: NonNullable<RecordView['redaction']>): string {
  if (r.mode !== 'strings') return r.mode;
  const names = r.rewrittenNames ? `, ${r.rewrittenNames} element names without attribute values` : '';
  return `strings (${r.redactedStrings ?? 0} string values replaced${names})`;
}

/** A few lines: id, target, status, phase/error, timings, artifact, redaction. */
export function formatRecord(r: RecordView): string {
  const lines = [`capture ${r.id}  target ${r.targetId}  ${r.status}${r.phase ? ` (${r.phase})` : ''}`];
  if (r.attempts !== undefined && r.attempts > 1) lines.push(`  attempts  ${r.attempts}`);
  // The attempts that were retried; the last one's error is the `error` line.
  for (const f of r.failedAttempts ?? []) if (f.nextAttemptAt !== null) lines.push(`  retried   ${failedAttemptText(f)}`);
  if (r.coalesced !== undefined && r.coalesced > 0) lines.push(`  joined by ${r.coalesced} other request(s)`);
  if (r.error) lines.push(`  error     ${r.error.code}: ${r.error.message}${r.error.hint ? `\n  check     ${r.error.hint}` : ''}`);
  if (r.timings) {
    const t = r.timings;
    // Snapshot phases, then a sampling profile's (start, sampling, stop): a record has one set.
    const order = ['queued', 'connect', 'preflight', 'warm', 'enable', 'gc', 'generate', 'serialize', 'start', 'sampling', 'stop', 'sink', 'total'];
    lines.push(`  timings   ${order.filter((k) => t[k] !== undefined).map((k) => `${k} ${Math.round(t[k]!)} ms`).join(', ')}`);
  }
  if (r.artifact) lines.push(`  artifact  ${r.artifact.location} (${formatMiB(r.artifact.bytesStored)} stored${r.artifact.kind === 'sampling-profile' ? ', allocation sampling profile' : ''})`);
  if (r.redaction) lines.push(`  redact    ${redactionText(r.redaction)}`);
  return lines.join('\n');
}
