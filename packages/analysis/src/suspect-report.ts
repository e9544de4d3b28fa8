/**
 * Suspects from two snapshots' groups (or, without analyses, from the class
 * table): one suspect per leak, named after the object that newly holds it
 * and what it gained, ranked by the memory it newly holds, listed when it
 * passes the significance rule; everything below it is one line of small
 * changes (docs/analysis.md).
 */
import type { ClassDelta } from './class-delta.ts';
import type { Holder, SuspectGroup } from './analysis-schema.ts';
import { classKind, groupKey, NOTHING_GREW, type Container, type Suspect, type SuspectPart, type Suspects } from './suspects.ts';
import { leadPart, mergeRows, type Merged, type PartRow, type Row } from './suspect-merge.ts';
import { significant } from './significance.ts';
import { shortPath } from './paths.ts';
import { allocatedAtLine, suspectAllocatedAt } from './allocation-site.ts';

/** How many suspects a diff lists. */
export const SUSPECTS = 10;

/** Bytes for a reason line: 1.5 MiB, 12.0 KiB, 800 B. */
export function formatBytes(bytes: number): string {
  const abs = Math.abs(bytes);
  const sign = bytes < 0 ? '-' : '';
  if (abs >= 1024 * 1024) return `${sign}${(abs / 1024 / 1024).toFixed(1)} MiB`;
  if (abs >= 1024) return `${sign}${(abs / 1024).toFixed(1)} KiB`;
  return `${sign}${abs} B`;
}

const int = (x: number): string => Math.round(x).toLocaleString('en-US');
const signed = (x: number): string => `${x >= 0 ? '+' : '-'}${int(Math.abs(x))}`;

/** "`sessions` (Map)", "`log` in a closure scope", "(Array) `__leaks`". */
export function describeHolder(h: Holder): string {
  if (h.class === 'system / Context') {
    const scope = h.within === undefined || h.within === null ? 'a closure scope' : `the scope of closures held by ${h.within.edge === null ? `a ${h.within.class}` : `\`${h.within.edge}\` (${h.within.class})`}`;
    if (h.via === null) return scope;
    return scope === 'a closure scope' ? `\`${h.via}\` (${variableWords(h)})` : `\`${h.via}\` (a variable of ${scope})`;
  }
  if (h.class === 'global' || h.class === 'Window' || h.class.startsWith('global / ')) return h.via === null ? 'the global object' : `\`${h.via}\` (a global)`;
  return h.edge === null ? `a ${h.class}` : `\`${h.edge}\` (${h.class})`;
}

/** "`sessions` (Map)", "`tick` (Array) of `bus` (EventEmitter)", "`log` (a module or closure variable)", "a GC root". */
export function describeContainer(c: Container | null | undefined): string {
  if (c === null || c === undefined) return 'a GC root';
  if (c.class === 'system / Context') return c.name === null ? 'a closure scope' : `\`${c.name}\`, ${variableWords(c)}`;
  if (c.class === 'global' || c.class === 'Window' || c.class.startsWith('global / ')) return c.name === null ? 'the global object' : `\`${c.name}\` (a global)`;
  const self = c.name === null ? `a ${c.class}` : `\`${c.name}\` (${c.class})`;
  // The variable naming the container, or its owner when it has one (`bus`, whose `tick` listener array grew).
  const declared = c.scope === undefined ? '' : `, ${variableWords(c)}`;
  if (c.owner === null) return `${self}${declared}`;
  return `${self} of ${c.owner.name === null ? `a ${c.owner.class}` : `\`${c.owner.name}\` (${c.owner.class})`}${declared}`;
}

/** "a module variable of src/sessions.js", "a variable of a function in src/app.js", "a module or closure variable". */
function variableWords(c: Pick<Container, 'scope' | 'script'>): string {
  const what = c.scope === 'module' ? 'a module variable' : c.scope === 'closure' ? 'a variable of a function' : 'a module or closure variable';
  return c.script === undefined ? what : `${what}${c.scope === 'closure' ? ' in' : ' of'} ${c.script}`;
}

const KEYED = new Set(['Map', 'WeakMap']);
const ENTRIES = new Set(['Map', 'Set', 'WeakMap', 'WeakSet']);

/** A part in words: `3,000 SessionRecord (+1.3 MiB)`, `3,000 keys (+93.8 KiB)`, `table +112.7 KiB`. */
function partWords(p: PartRow, c: Container | null): string {
  const bytes = formatBytes(p.row.retainedSizeDelta);
  if (p.role === 'holder') {
    const what = c !== null && ENTRIES.has(c.class) && p.row.group.class === c.class ? 'table' : c?.class === 'Array' && p.row.group.class === 'Array' ? 'backing store' : `${p.row.group.class} grew`;
    return `${what} +${bytes}`;
  }
  const cls = c !== null && KEYED.has(c.class) && p.row.group.class === '(string)' ? 'keys' : p.row.group.class;
  return `${p.row.countDelta > 0 ? int(p.row.countDelta) : 'grew'} ${cls} (+${bytes})`;
}

/** The one line of a suspect: the holder and what it gained, then the parts. */
function reasonOf(m: Merged, lead: PartRow): string {
  const c = m.container;
  const where = describeContainer(c);
  const n = lead.role === 'holder' ? 0 : lead.row.countDelta;
  const noun = c !== null && ENTRIES.has(c.class) ? 'entries' : c?.class === 'Array' ? 'elements' : lead.row.group.class;
  const trees = lead.row.detached.trees;
  // Chromium: DOM kept out of the document says so, with the detached nodes the trees hold (DevTools' and memlab's count).
  const head =
    trees > 0 && lead.role !== 'holder'
      ? `${signed(trees)} detached ${lead.row.group.class} tree${trees === 1 ? '' : 's'} in ${where} (${int(lead.row.detached.nodes)} detached node${lead.row.detached.nodes === 1 ? '' : 's'})`
      : n > 0
        ? `${signed(n)} ${noun} in ${where}`
        : `${c === null ? lead.row.group.class : where} grew in place`;
  const parts = [lead, ...m.parts.filter((p) => p !== lead).sort((a, b) => b.row.retainedSizeDelta - a.row.retainedSizeDelta)];
  const held = c === null ? ', held by a GC root' : '';
  // One part that is what the head names: its size is all there is to add.
  if (parts.length === 1 && n > 0 && noun === lead.row.group.class) return `${head} (+${formatBytes(lead.row.retainedSizeDelta)})${held}`;
  return `${head}: ${parts.map((p) => partWords(p, c)).join(', ')}${held}`;
}

/** Options of {@link graphSuspects}. */
export interface GraphSuspectOptions {
  /** How many suspects to list (default {@link SUSPECTS}). */
  top?: number;
  /** The class table's count deltas: a group's new objects count only as far as their class grew (a prototype whose holder changed does not). */
  classes?: readonly ClassDelta[];
  /** Leak hunts with a drive: the rounds between baseline and target, and the groups of the objects the extra round made that live in final. */
  rounds?: { count: number; extra: readonly SuspectGroup[] };
}

/** Suspects from two snapshots' groups: one per holder, largest growth of retained memory first, noise summed in `small`. */
export function graphSuspects(base: readonly SuspectGroup[], head: readonly SuspectGroup[], options: GraphSuspectOptions = {}): Suspects {
  const before = new Map(base.map((g) => [groupKey(g), g]));
  const classGrowth = new Map(options.classes?.map((c) => [c.name, c.countDelta]));
  const rows: Row[] = [];
  let total = 0;
  for (const g of head) {
    const b = before.get(groupKey(g));
    const retainedSizeDelta = g.retainedSize - (b?.retainedSize ?? 0);
    if (retainedSizeDelta <= 0) continue;
    // Engine internals held straight by a root group (code, interned strings): not something a service holds.
    if (g.kind === 'internal' && g.holder === null) continue;
    const countDelta = g.count - (b?.count ?? 0);
    total += retainedSizeDelta;
    const detached = { trees: (g.detached?.trees ?? 0) - (b?.detached?.trees ?? 0), nodes: (g.detached?.nodes ?? 0) - (b?.detached?.nodes ?? 0) };
    rows.push({ group: g, base: b, countDelta, selfSizeDelta: g.selfSize - (b?.selfSize ?? 0), retainedSizeDelta, confirmed: Math.min(countDelta, classGrowth.get(g.class) ?? countDelta), detached });
  }
  const extra = new Map(options.rounds?.extra.map((g) => [groupKey(g), g.count]));
  const listed: Suspect[] = [];
  let smallCount = 0;
  let smallBytes = 0;
  for (const m of mergeRows(rows)) {
    const lead = leadPart(m);
    const bytes = m.parts.reduce((s, p) => s + p.row.retainedSizeDelta, 0);
    const count = Math.max(0, ...m.parts.filter((p) => p.role !== 'holder').map((p) => p.row.confirmed));
    const r = lead.row;
    let perRound: Suspect['perRound'];
    let ok = significant({ count, bytes }, total);
    if (options.rounds !== undefined) {
      // A leak grows in every round: as much per round as in the extra round before the final snapshot. A buffer each round replaces left nothing behind.
      const rounds = options.rounds.count;
      perRound = { count: r.countDelta / rounds, rounds, extra: extra.get(groupKey(r.group)) ?? 0 };
      ok &&= r.countDelta >= rounds && perRound.extra >= perRound.count / 2;
    }
    if (!ok) {
      smallCount++;
      smallBytes += bytes;
      continue;
    }
    const parts: SuspectPart[] = [lead, ...m.parts.filter((p) => p !== lead)].map((p) => ({
      role: p.role,
      class: p.row.group.class,
      kind: p.row.group.kind,
      holder: p.row.group.holder,
      countDelta: p.row.countDelta,
      retainedSizeDelta: p.row.retainedSizeDelta,
      ...(p.row.group.allocatedAt === undefined ? {} : { allocatedAt: p.row.group.allocatedAt }),
    }));
    const allocated = allocatedAtLine(suspectAllocatedAt(parts));
    const reason = reasonOf(m, lead) + (perRound === undefined ? '' : ` (${signed(perRound.count)} per round, ${perRound.rounds} round${perRound.rounds === 1 ? '' : 's'})`);
    listed.push({
      rank: 0,
      class: r.group.class,
      kind: r.group.kind,
      holder: r.group.holder,
      container: m.container,
      base: r.base === undefined ? null : { count: r.base.count, selfSize: r.base.selfSize, retainedSize: r.base.retainedSize },
      head: { count: r.group.count, selfSize: r.group.selfSize, retainedSize: r.group.retainedSize },
      countDelta: r.countDelta,
      selfSizeDelta: r.selfSizeDelta,
      retainedSizeDelta: bytes,
      ...(perRound === undefined ? {} : { perRound }),
      ...(r.detached.trees > 0 ? { detached: r.detached } : {}),
      path: r.group.path,
      ...(r.group.path === null ? {} : { shortPath: shortPath(r.group.path) }),
      parts,
      ...(allocated === undefined ? {} : { allocated }),
      reason,
    });
  }
  listed.sort((x, y) => (y.retainedSizeDelta ?? 0) - (x.retainedSizeDelta ?? 0) || y.countDelta - x.countDelta || (x.class < y.class ? -1 : x.class > y.class ? 1 : 0));
  const top = options.top ?? SUSPECTS;
  for (const s of listed.slice(top)) {
    smallCount++;
    smallBytes += s.retainedSizeDelta ?? 0;
  }
  return { mode: 'graph', suspects: listed.slice(0, top).map((s, i) => ({ ...s, rank: i + 1 })), ...(listed.length === 0 ? { verdict: NOTHING_GREW } : {}), small: { count: smallCount, bytes: smallBytes } };
}

/** `and 7 small changes (21.4 KiB in all)`, or nothing when there are none. */
export function smallLine(s: Suspects): string | null {
  if (s.small === undefined || s.small.count === 0) return null;
  return `and ${int(s.small.count)} small change${s.small.count === 1 ? '' : 's'} (${formatBytes(s.small.bytes)} in all)`;
}

const KIND_ORDER = { application: 0, builtin: 1, internal: 2 } as const;

/**
 * Summary-only suspects: classes that grew past the significance rule (by self
 * size), application classes above built-ins above engine internals; no holders.
 */
export function summarySuspects(classes: readonly ClassDelta[], note: string, top = SUSPECTS): Suspects {
  const total = classes.reduce((s, c) => s + Math.max(0, c.selfSizeDelta), 0);
  const grew = classes.filter((c) => c.selfSizeDelta > 0 || c.countDelta > 0);
  const kept = grew.filter((c) => significant({ count: c.countDelta, bytes: c.selfSizeDelta }, total));
  const rows = kept
    .map((c) => ({ c, kind: classKind(c.name) }))
    .sort((x, y) => KIND_ORDER[x.kind] - KIND_ORDER[y.kind] || y.c.selfSizeDelta - x.c.selfSizeDelta || y.c.countDelta - x.c.countDelta)
    .slice(0, top);
  const small = grew.filter((c) => !rows.some((r) => r.c === c));
  return {
    mode: 'summary',
    note,
    suspects: rows.map(({ c, kind }, i) => ({
      rank: i + 1,
      class: c.name,
      kind,
      holder: null,
      base: c.base,
      head: c.head,
      countDelta: c.countDelta,
      selfSizeDelta: c.selfSizeDelta,
      path: null,
      // The class leads: before the analyses exist it is the whole answer (issue 37).
      reason: `${signed(c.countDelta)} ${c.name} (${c.selfSizeDelta >= 0 ? '+' : ''}${formatBytes(c.selfSizeDelta)} self); holder unknown (summary only)`,
    })),
    ...(rows.length === 0 ? { verdict: NOTHING_GREW } : {}),
    small: { count: small.length, bytes: small.reduce((s, c) => s + Math.max(0, c.selfSizeDelta), 0) },
  };
}
