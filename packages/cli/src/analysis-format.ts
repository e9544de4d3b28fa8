/** Human output of `heapcap analyze` and `heapcap diff`: aligned tables, largest first. */
import { describeHolder, formatBytes, formatPath, NOTHING_GREW, smallLine, type Analysis, type Suspects, type SummaryDiff } from '@heapcap/analysis';
import { formatMiB as mb, MIB } from '@heapcap/capture';

const int = (n: number): string => Math.round(n).toLocaleString('en-US');
const signed = (n: number, fmt: (v: number) => string): string => (n > 0 ? `+${fmt(n)}` : n < 0 ? `-${fmt(-n)}` : fmt(0));
// MiB, like every size the CLI prints.
const mbNum = (bytes: number): string => (bytes / MIB).toFixed(2);

/** Right-aligns every column but the first. */
function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]): string =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join('  ').trimEnd();
  return [line(header), ...rows.map(line)].map((l) => `  ${l}`).join('\n');
}

/** Class names can be long C++ template names: cut them for the table. */
const short = (name: string): string => (name.length > 70 ? `${name.slice(0, 67)}...` : name);

/** `heapcap analyze` without --json. */
export function formatAnalysis(a: Analysis, top: number): string {
  const out: string[] = [];
  out.push(`snapshot   ${mb(a.snapshotBytes)} of JSON, ${int(a.nodeCount)} nodes, ${int(a.edgeCount)} edges, ${mb(a.totalSelfSize)} of objects (self sizes)`);
  out.push('');
  out.push(`classes, largest retained size first (${top} of ${a.classes.length}):`);
  out.push(
    table(
      ['class', 'count', 'self MiB', 'retained MiB'],
      a.classes.slice(0, top).map((c) => [short(c.name), int(c.count), mbNum(c.selfSize), mbNum(c.retainedSize)]),
    ),
  );
  out.push('');
  out.push(`largest dominators and their retainer paths (${Math.min(top, a.dominators.length)}):`);
  a.dominators.slice(0, top).forEach((d, i) => {
    out.push(`  ${String(i + 1).padStart(2)}. ${short(d.class)} @${d.id}: ${mb(d.retainedSize)} retained`);
    out.push(`      ${d.path === null ? '(no path from the root: held only by weak or internal references)' : formatPath(d.path)}`);
  });
  if (a.detached !== null && a.detached.count > 0) {
    out.push('');
    // Chromium: DOM nodes not in a document. Node.js marks some of its own bindings detached too.
    out.push(`detached native nodes: ${int(a.detached.count)} (${mb(a.detached.selfSize)} self size)`);
    out.push(table(['class', 'count', 'self MiB'], a.detached.classes.slice(0, top).map((c) => [short(c.name), int(c.count), mbNum(c.selfSize)])));
  }
  return `${out.join('\n')}\n`;
}

/** The suspects block: one numbered line per suspect (its reason), its parts under it, the path to its holder, then the small changes. */
export function formatSuspects(s: Suspects, verbose = false): string[] {
  const out = [s.mode === 'graph' ? 'suspects, largest new retained memory first:' : `suspects (${s.note ?? 'summary-only'}):`];
  if (s.suspects.length === 0) out.push(`  none: ${NOTHING_GREW}`);
  for (const x of s.suspects) {
    out.push(`${String(x.rank).padStart(3)}. ${x.reason}`);
    // One part is the line itself; several are listed under it, each with its own holder.
    if ((x.parts?.length ?? 0) > 1) for (const p of x.parts ?? []) out.push(`      ${p.role.padEnd(7)} ${p.countDelta > 0 ? `+${int(p.countDelta)} ` : ''}${p.class}  +${formatBytes(p.retainedSizeDelta)}${p.holder === null ? '' : `  held by ${describeHolder(p.holder)}`}`);
    // The application's own names by default; V8's whole path (roots, tables, contexts) with --verbose.
    if (x.path !== null) out.push(`      ${verbose || x.shortPath === undefined ? formatPath(x.path) : `path: ${x.shortPath}`}`);
    // Hunts that tracked allocations: where the suspect's objects were made.
    if (x.allocated !== undefined) out.push(`      ${x.allocated}`);
  }
  const small = smallLine(s);
  if (small !== null) out.push(`  ${small}`);
  return out;
}

/** `heapcap diff` without --json. */
export function formatDiff(d: SummaryDiff, top: number, baseName: string, headName: string, verbose = false): string {
  const out: string[] = [];
  out.push(`base  ${baseName}: ${int(d.base.nodeCount)} nodes, ${mb(d.base.totalSelfSize)}`);
  out.push(`head  ${headName}: ${int(d.head.nodeCount)} nodes, ${mb(d.head.totalSelfSize)}`);
  out.push(`total ${signed(d.nodeCountDelta, int)} nodes, ${signed(d.totalSelfSizeDelta, mb)}`);
  out.push('');
  out.push(...formatSuspects(d.suspects, verbose));
  out.push('');
  const changed = d.classes.filter((c) => c.status !== 'unchanged');
  out.push(`classes, largest self-size growth first (${Math.min(top, changed.length)} of ${changed.length} changed):`);
  const header = ['class', 'status', 'count', 'Δ count', 'self MiB', 'Δ self MiB', ...(d.retained ? ['Δ retained MiB'] : [])];
  out.push(
    table(
      header,
      changed.slice(0, top).map((c) => [
        short(c.name),
        c.status,
        int(c.head?.count ?? 0),
        signed(c.countDelta, int),
        mbNum(c.head?.selfSize ?? 0),
        signed(c.selfSizeDelta, mbNum),
        ...(d.retained ? [signed(c.retainedSizeDelta ?? 0, mbNum)] : []),
      ]),
    ),
  );
  return `${out.join('\n')}\n`;
}
