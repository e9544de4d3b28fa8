/**
 * One suspect per leak: the (class, holder) rows of a diff grouped under the
 * object that newly holds them (docs/analysis.md, "One suspect per leak").
 *
 * A row is one group of suspects.ts seen on both sides. Its *container* is
 * the object it was added to: its holder (`sessions` (Map)), or, for objects
 * kept by closures' scopes, the holder of those closures (`handlers`
 * (Array)). Rows of one container are the parts of one suspect:
 *
 * - `gained`: what the container newly holds (3,000 SessionRecord, 3,000 keys);
 * - `brought`: what came with it (the requests the gained closures capture,
 *   the LineItems in the `items` of gained Orders);
 * - `holder`: the container's own growth (a Map's table, an Array's backing
 *   store, an EventEmitter whose listener array grew), found by name: the row
 *   of the container's class held under the container's name (or, for a
 *   container owned by an object, the owner's row that grew in place).
 */
import type { Holder, SuspectGroup, SuspectKind } from './analysis-schema.ts';

/** One (class, holder) group's change between two snapshots. */
export interface Row {
  group: SuspectGroup;
  base: SuspectGroup | undefined;
  countDelta: number;
  selfSizeDelta: number;
  retainedSizeDelta: number;
  /** New objects the class table confirms (a prototype or holder change of an old object confirms none). */
  confirmed: number;
  /** Chromium: growth of the detached DOM trees and nodes the group holds. */
  detached: { trees: number; nodes: number };
}

/** What a suspect's rows were added to. */
export interface Container {
  class: string;
  /** The reference naming it (`sessions`), or the variable for a scope; null when unnamed. */
  name: string | null;
  /** The object owning it (`bus` (EventEmitter) for its `tick` listener array). */
  owner: { class: string; name: string | null } | null;
  /** When a scope's variable names it: a module's or a function's, and the script declaring it. */
  scope?: 'module' | 'closure';
  script?: string;
}

/** The scope and script of a holder that is a scope's variable (copied onto the container it names). */
const declared = (h: Holder | null): Pick<Container, 'scope' | 'script'> =>
  h === null ? {} : { ...(h.scope === undefined ? {} : { scope: h.scope }), ...(h.script === undefined ? {} : { script: h.script }) };

/** A part of a suspect and its role. */
export interface PartRow {
  role: 'gained' | 'brought' | 'holder';
  row: Row;
}

/** Rows grouped under one container. */
export interface Merged {
  container: Container | null;
  parts: PartRow[];
}

const SCOPE_CLASSES = new Set(['system / Context', 'global', 'Window']);
const isScope = (cls: string): boolean => SCOPE_CLASSES.has(cls) || cls.startsWith('global / ');

/** The container a row's units were added to, with how they relate to it; null for rows held straight by a GC root. */
function containerOf(row: Row): { container: Container; role: 'gained' | 'brought' } | null {
  const h: Holder | null = row.group.holder;
  if (h === null) return null;
  if (h.class === 'system / Context' && h.within !== undefined && h.within !== null) {
    const w = h.within;
    return { container: w.variable === true ? { class: 'system / Context', name: w.class, owner: null } : { class: w.class, name: w.edge, owner: null }, role: 'brought' };
  }
  if (isScope(h.class)) return { container: { class: h.class, name: h.via, owner: null, ...declared(h) }, role: 'gained' };
  const owner = h.owner === undefined || h.owner === null ? null : { class: h.owner, name: null };
  return { container: { class: h.class, name: h.edge, owner }, role: 'gained' };
}

const keyOf = (c: Container | null, cls: string): string => (c === null ? `\u0001${cls}` : [c.class, c.name ?? '', c.owner?.class ?? ''].join('\u0000'));
/** The name under which a row's own object is a container: the variable or reference its holder reaches it by. */
const selfName = (row: Row): string => row.group.holder?.via ?? row.group.holder?.edge ?? '';

/** Groups rows into suspects, one per container (rows held straight by a GC root stay one per class). */
export function mergeRows(rows: readonly Row[]): Merged[] {
  // The containers: what every row was added to.
  const where = rows.map((row) => ({ row, at: containerOf(row) }));
  const containers = new Map<string, Container>();
  for (const { at } of where) if (at !== null) containers.set(keyOf(at.container, ''), at.container);
  const merged = new Map<string, Merged>();
  const placed = new Map<Row, Merged>();
  const place = (key: string, container: Container | null, part: PartRow): void => {
    let m = merged.get(key);
    // One container object per key: the one every row's lookup finds.
    if (m === undefined) merged.set(key, (m = { container: containers.get(key) ?? container, parts: [] }));
    // The container's own growth, held by a scope's variable, says where that variable is declared.
    if (part.role === 'holder' && m.container !== null && part.row.group.holder !== null && isScope(part.row.group.holder.class)) Object.assign(m.container, declared(part.row.group.holder));
    m.parts.push(part);
    placed.set(part.row, m);
  };
  // Application classes whose instances grew: objects in collections they own are brought by them (an Order's LineItems).
  const growing = new Map<string, Row>();
  for (const r of rows) {
    if (r.group.kind !== 'application' || r.confirmed <= 0) continue;
    const best = growing.get(r.group.class);
    if (best === undefined || r.retainedSizeDelta > best.retainedSizeDelta) growing.set(r.group.class, r);
  }
  const deferred: { row: Row; into: Row }[] = [];
  for (const { row, at } of where) {
    // The container's own growth: a row of the container's class held under its name, or the owner of an owned container that grew in place.
    const self = [row.group.class, selfName(row), ''].join('\u0000');
    const named = containers.get(self);
    if (named !== undefined) {
      place(self, named, { role: 'holder', row });
      continue;
    }
    if (row.confirmed <= 0) {
      const owned = [...containers.entries()].find(([, c]) => c.owner?.class === row.group.class);
      if (owned !== undefined) {
        owned[1].owner = { class: row.group.class, name: selfName(row) === '' ? null : selfName(row) };
        place(owned[0], owned[1], { role: 'holder', row });
        continue;
      }
    }
    // Objects owned by, or held straight by, new instances of a growing application class came with them.
    const h = row.group.holder;
    const owner = h === null ? undefined : (h.owner ?? (isScope(h.class) ? undefined : h.class));
    const into = owner === undefined || owner === row.group.class ? undefined : growing.get(owner);
    if (into !== undefined && into !== row) {
      deferred.push({ row, into });
      continue;
    }
    if (at === null) {
      place(keyOf(null, row.group.class), null, { role: 'gained', row });
      continue;
    }
    // Closures' scopes do not know their holder's owner (`message` (Array) of `hub`): the container of that class and name.
    const key = keyOf(at.container, '');
    const same = at.role === 'brought' ? [...containers.entries()].find(([, c]) => c.class === at.container.class && c.name === at.container.name && c.owner !== null) : undefined;
    // A scope's variable whose object grew in place (a promise's reactions) is that container's own growth.
    const own = isScope(at.container.class) && row.countDelta <= 0 && at.container.name !== null;
    if (same !== undefined) place(same[0], same[1], { role: at.role, row });
    else place(key, at.container, { role: own ? 'holder' : at.role, row });
  }
  for (const { row, into } of deferred) {
    const m = placed.get(into);
    if (m === undefined) place(keyOf(null, row.group.class), null, { role: 'gained', row });
    else {
      m.parts.push({ role: 'brought', row });
      placed.set(row, m);
    }
  }
  return [...merged.values()];
}

/**
 * The part a suspect is named after: of the parts of new objects, application
 * classes first (the requests a closure keeps, not the closures), then what
 * the container gained before what came with it (the Orders, not their
 * LineItems), then the largest; else the largest part.
 */
export function leadPart(m: Merged): PartRow {
  const byBytes = (a: PartRow, b: PartRow): number => b.row.retainedSizeDelta - a.row.retainedSizeDelta;
  const rank = (p: PartRow): number => (p.row.group.kind === 'application' ? 0 : 2) + (p.role === 'gained' ? 0 : 1);
  const counted = m.parts.filter((p) => p.role !== 'holder' && p.row.countDelta > 0).sort((a, b) => rank(a) - rank(b) || byBytes(a, b));
  return counted[0] ?? [...m.parts].sort(byBytes)[0] ?? (m.parts[0] as PartRow);
}

/** The kind of the lead part (application above built-in above internal). */
export const leadKind = (m: Merged): SuspectKind => leadPart(m).row.group.kind;
