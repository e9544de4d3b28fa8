/** Readable lines for the demo's POST /v1/captures response (the record schema is services/api + packages/state). */
import { statSync } from 'node:fs';
import { isAbsolute, relative } from 'node:path';
import { siblingOf } from '@heapcap/storage';

/** The parts of a capture record the demo shows. */
export interface RecordView {
  id: string;
  targetId: string;
  labels: Record<string, string>;
  trigger: { kind: string; who: string; reason?: string; from?: string };
  status: string;
  phase: string | null;
  error: { code: string; message: string; hint?: string } | null;
  timings: Record<string, number> | null;
  artifact: { key: string; manifestKey: string; location: string; bytesUncompressed: number; bytesStored: number; sha256: string; gzip: boolean } | null;
  attempts: number;
  createdAt: string;
  finishedAt: string | null;
}

/** The body of a capture response (`{capture, coalesced, replayed, links}`) or an error body. */
export interface CaptureResponse {
  capture?: RecordView;
  coalesced?: boolean;
  links?: { self: string; artifact: string };
  error?: { code: string; message: string };
}

const PHASES = ['connect', 'preflight', 'warm', 'enable', 'gc', 'generate', 'serialize', 'sink'];
/** Bytes in MiB, the one unit of the demo's report (as the CLI's and the console's). */
export const mib = (n: number): string => `${(n / 1048576).toFixed(1)} MiB`;
const ms = (n: number): string => n.toFixed(1).padStart(9);

/** A path relative to the working directory when it lies inside it (shorter to read and to copy). */
export function shortPath(p: string): string {
  if (!isAbsolute(p)) return p;
  const r = relative(process.cwd(), p);
  return r.startsWith('..') ? p : `./${r}`;
}

/** Where the manifest is on disk: beside the artifact (the store's layout, from @heapcap/storage). */
export function manifestPath(a: NonNullable<RecordView['artifact']>): string {
  return siblingOf(a.location, 'manifest');
}

/** The response as lines: status, target, trigger, error or phase timings, snapshot size, artifact. */
export function formatResponse(status: number, body: CaptureResponse): string[] {
  const r = body.capture;
  if (r === undefined) return [`HTTP ${status}: ${body.error ? `${body.error.code}: ${body.error.message}` : 'unexpected response'}`];
  const took = r.finishedAt === null ? '' : ` in ${((Date.parse(r.finishedAt) - Date.parse(r.createdAt)) / 1000).toFixed(1)} s`;
  const labels = Object.entries(r.labels).map(([k, v]) => `${k}=${v}`).join(', ');
  const lines = [
    `HTTP ${status}: capture ${r.id} ${r.status}${took}${r.attempts > 1 ? ` (attempt ${r.attempts})` : ''}${body.coalesced === true ? ' (joined a capture already running)' : ''}`,
    `  target     ${r.targetId}${labels === '' ? '' : ` (${labels})`}`,
    `  trigger    ${r.trigger.kind} by ${r.trigger.who}${r.trigger.from ? ` from ${r.trigger.from}` : ''}${r.trigger.reason ? `: "${r.trigger.reason}"` : ''}`,
  ];
  if (r.error !== null) {
    lines.push(`  error      ${r.error.code} (phase ${r.phase ?? '?'}): ${r.error.message}`);
    if (r.error.hint) lines.push(`  check      ${r.error.hint}`);
  }
  if (r.timings !== null) {
    const t = r.timings;
    lines.push('', '  phase             ms');
    if (t['queued'] !== undefined) lines.push(`  queued     ${ms(t['queued'])}   waiting for a worker`);
    for (const p of PHASES) if (t[p] !== undefined) lines.push(`  ${p.padEnd(10)} ${ms(t[p])}`);
    if (t['total'] !== undefined) lines.push(`  total      ${ms(t['total'])}   connect … sink`);
  }
  const a = r.artifact;
  if (a !== null) {
    lines.push(
      '',
      `  snapshot   ${mib(a.bytesUncompressed)} of JSON, ${mib(a.bytesStored)} stored${a.gzip ? ' (gzip)' : ''}, sha256 ${a.sha256.slice(0, 16)}…`,
      `  artifact   ${shortPath(a.location)}`,
      `  manifest   ${shortPath(manifestPath(a))}`,
    );
  } else if (r.status === 'queued' || r.status === 'running') {
    lines.push(`  still ${r.status} (phase ${r.phase ?? 'queued'}) when the wait ended`);
  }
  return lines;
}

/** Bytes of the file at `p`, or null when it is not there. */
export function fileSize(p: string): number | null {
  try {
    return statSync(p).size;
  } catch {
    return null;
  }
}
