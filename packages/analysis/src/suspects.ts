/**
 * Leak suspects: the few things a person should look at first in a diff,
 * ranked by the memory they newly hold.
 *
 * Per snapshot, every reachable node is given an *owner* (a "unit") by walking
 * the dominator tree from the root:
 *
 * - application objects (constructors that are not JavaScript built-ins, DOM
 *   wrappers) are always their own unit;
 * - V8's structural internals (`(system)`, `(array)` backing stores, code,
 *   shapes, `system / …` natives, closure Contexts) fold into the unit of their
 *   dominator;
 * - values (strings, closures, `Object`, `Buffer`, `Date`, `ArrayBuffer`, …)
 *   fold into the unit of their dominator when that is an object that owns them
 *   (a record's fields), and are their own unit when a collection (`Map`,
 *   `Set`, `Array`, …) or a scope (a closure's Context, the global) holds them:
 *   then they are what leaks;
 * - collections fold into an owning object, else are their own unit.
 *
 * A unit's retained size is the self size of everything folded into it, so a
 * record whose fields grew is one row, and the chain holding it (the Map, the
 * Server, the closure) does not grow with it. Units are grouped by (class,
 * holder): the holder is the nearest dominator that is not a structural
 * internal, named by the reference that reaches it (`sessions`, `__leaks`).
 * V8 node ids do not survive across inspector sessions, so two snapshots are
 * compared by these groups, not by ids. Only nodes reachable from the root
 * over strong references count: garbage left in a snapshot never does.
 *
 * suspect-report.ts turns two snapshots' groups into suspects: rows grouped
 * under the object that newly holds them (suspect-merge.ts), kept when they
 * pass the significance rule (significance.ts).
 */
import { z } from 'zod';
import type { HeapGraph } from './graph.ts';
import { DETACHED } from './snapshot-meta.ts';
import { scopeInfo, type ScopeInfo } from './scope-script.ts';
import { dominatorChildren } from './classes.ts';
import { edgeLabel, edgeSource, nodeClass as snapshotClass, retainerPath } from './paths.ts';
import { AllocatedAtSchema } from './allocation-site.ts';
import { HolderSchema, PathStepSchema, SuspectKindSchema, type Holder, type SuspectGroup, type SuspectKind } from './analysis-schema.ts';

const SideSchema = z.object({ count: z.number(), selfSize: z.number(), retainedSize: z.number().optional() });

/** One part of a suspect (suspect-merge.ts): what the holder gained, what came with it, or the holder's own growth. */
export const SuspectPartSchema = z.object({
  /** `gained`: objects the holder newly holds; `brought`: objects that came with them (kept by their closures, in collections they own); `holder`: the holder's own growth (a Map's table). */
  role: z.enum(['gained', 'brought', 'holder']),
  class: z.string(),
  kind: SuspectKindSchema,
  holder: HolderSchema.nullable(),
  countDelta: z.number(),
  retainedSizeDelta: z.number(),
  /** Leak hunts that tracked allocations: the stacks that allocated the part's surviving new instances (allocation-site.ts). */
  allocatedAt: AllocatedAtSchema.optional(),
});
export type SuspectPart = z.infer<typeof SuspectPartSchema>;

/** The object a suspect's objects were added to. */
export const ContainerSchema = z.object({
  class: z.string(),
  /** The reference or variable naming it (`sessions`); null when unnamed. */
  name: z.string().nullable(),
  /** The object owning it (`bus` (EventEmitter) for its `tick` listener array). */
  owner: z.object({ class: z.string(), name: z.string().nullable() }).nullable(),
  /** When a scope's variable names it: a module's top-level scope or a function's, and the script declaring it (`src/sessions.js`). */
  scope: z.enum(['module', 'closure']).optional(),
  script: z.string().optional(),
});
export type Container = z.infer<typeof ContainerSchema>;

export const SuspectSchema = z.object({
  rank: z.number().int().positive(),
  /** The lead part's class: the largest part of new objects (`SessionRecord`). */
  class: z.string(),
  kind: SuspectKindSchema,
  /** The lead part's holder. */
  holder: HolderSchema.nullable(),
  /** What newly holds the suspect's objects (`sessions` (Map)); null for objects held straight by a GC root. Graph suspects only. */
  container: ContainerSchema.nullable().optional(),
  base: SideSchema.nullable(),
  head: SideSchema.nullable(),
  /** The lead part's count and self size growth. */
  countDelta: z.number(),
  selfSizeDelta: z.number(),
  /** Graph suspects only: growth of the memory of all parts. */
  retainedSizeDelta: z.number().optional(),
  /** Leak hunts with a drive: the lead part's growth per round of the drive, and in the extra round before the final snapshot. */
  perRound: z.object({ count: z.number(), rounds: z.number().int().positive(), extra: z.number() }).optional(),
  /** Chromium: the lead part's new detached DOM trees (its units holding detached nodes) and the detached nodes they hold. */
  detached: z.object({ trees: z.number(), nodes: z.number() }).optional(),
  path: z.array(PathStepSchema).nullable(),
  /** The path in the application's own names (`sessions (Map) → SessionRecord`); the whole path is `path`. */
  shortPath: z.string().optional(),
  /** Graph suspects: every part, the lead first. */
  parts: z.array(SuspectPartSchema).optional(),
  /**
   * Leak hunts that tracked allocations: the first stack of the first part that has one, in words, as every
   * channel prints it (`allocated at src/session.js:44 createSession ← src/routes/login.js:12`; allocation-site.ts).
   */
  allocated: z.string().optional(),
  /** One line: the holder and what it gained, then the parts (`+3,000 entries in \`sessions\` (Map): 3,000 SessionRecord (+1.3 MiB), …`). */
  reason: z.string(),
});
export type Suspect = z.infer<typeof SuspectSchema>;

/** The words every channel prints when a diff has no suspect. */
export const NOTHING_GREW = 'nothing grew beyond noise';

export const SuspectsSchema = z.object({
  /** `graph`: from both snapshots' dominator trees (holders known); `summary`: from class counts only (no holders). */
  mode: z.enum(['graph', 'summary']),
  /** Why the suspects are summary-only, and what to do for holders. */
  note: z.string().optional(),
  /** Only growth that passes the significance rule (significance.ts); none: nothing grew beyond noise. */
  suspects: z.array(SuspectSchema),
  /** With no suspect: `nothing grew beyond noise` ({@link NOTHING_GREW}), so the API's answer says it in words too. */
  verdict: z.string().optional(),
  /** Growth below the rule (and suspects beyond the top): `and N small changes (X KiB in all)`. */
  small: z.object({ count: z.number().int().nonnegative(), bytes: z.number() }).optional(),
});
export type Suspects = z.infer<typeof SuspectsSchema>;

// Node kinds.
const ROOT = 0;
const STRUCT = 1;
const VALUE = 2;
const COLLECTION = 3;
const SCOPE = 4;
const APP = 5;

const COLLECTIONS = new Set(['Map', 'Set', 'WeakMap', 'WeakSet', 'Array']);
const SCOPES = new Set(['system / Context', 'global', 'Window', 'global / ']);
/** JavaScript and Node built-ins: they belong to whatever owns them. */
const BUILTINS = new Set([
  'Object', 'Buffer', 'Date', 'ArrayBuffer', 'SharedArrayBuffer', 'DataView', 'Uint8Array', 'Int8Array', 'Uint8ClampedArray', 'Uint16Array', 'Int16Array', 'Uint32Array',
  'Int32Array', 'Float32Array', 'Float64Array', 'BigInt64Array', 'BigUint64Array', 'Promise', 'Error', 'TypeError', 'RangeError', 'RegExp', 'Function', 'Number',
  'String', 'Boolean', 'Symbol', 'WeakRef', 'FinalizationRegistry', 'Arguments', 'URL', 'URLSearchParams',
]);
const VALUE_TYPES = new Set(['string', 'concatenated string', 'sliced string', 'closure', 'regexp', 'number', 'symbol', 'bigint']);

/** Classes of application constructors rank above built-ins, built-ins above engine internals (summary mode). */
export function classKind(name: string): SuspectKind {
  if (name.startsWith('(') || name.includes(' / ') || name.includes('::')) return 'internal';
  if (BUILTINS.has(name) || COLLECTIONS.has(name) || SCOPES.has(name)) return 'builtin';
  return 'application';
}

/**
 * A node's class for suspects: the summary's class, except that every scope is
 * `system / Context`. Newer V8 (Chromium's, Node 24's) names a context after
 * its scope (`system / Context / scope @37657`, an id that changes from one
 * snapshot to the next): kept, it would make scopes structural internals and
 * split one holder into a group per snapshot.
 */
function nodeClass(graph: HeapGraph, node: number): string {
  const cls = snapshotClass(graph, node);
  return cls.startsWith('system / Context / ') ? 'system / Context' : cls;
}

function nodeKinds(graph: HeapGraph): Uint8Array {
  const types = graph.layout.nodeTypes;
  const byType = types.map((t) => (t === 'synthetic' ? ROOT : t === 'object' || t === 'native' ? -1 : VALUE_TYPES.has(t) ? VALUE : STRUCT));
  const byName = new Map<number, number>();
  const kinds = new Uint8Array(graph.nodeCount);
  for (let i = 0; i < graph.nodeCount; i++) {
    const t = byType[graph.nodeType[i] as number] as number;
    if (t >= 0) {
      kinds[i] = t;
      continue;
    }
    const nameIndex = graph.nodeName[i] as number;
    let k = byName.get(nameIndex);
    if (k === undefined) {
      const name = nodeClass(graph, i);
      k = SCOPES.has(name) || name.startsWith('global / ') ? SCOPE : COLLECTIONS.has(name) ? COLLECTION : BUILTINS.has(name) ? VALUE : name.includes(' / ') || name.includes('::') || name === '' ? STRUCT : APP; // `system / …`, `Node / …`, Blink's C++ types: engine internals
      byName.set(nameIndex, k);
    }
    kinds[i] = k;
  }
  kinds[0] = ROOT;
  return kinds;
}

/** Options of {@link suspectGroups}. */
export interface GroupOptions {
  /** Paths are recorded for this many of the largest groups (default 300). */
  paths?: number;
  /**
   * Only these nodes count (1 = counts): a group's count is its counted units,
   * its retained size the self sizes of the counted nodes folded into it. A
   * leak hunt passes the objects created between its first two snapshots that
   * live in the third, so its suspects are ranked and folded as a diff's are.
   */
  counted?: Uint8Array;
  /** Chromium: every node's propagated detachedness (detached.ts); groups then count their detached trees and nodes. */
  detached?: Uint8Array | undefined;
  /** Called with each counted unit and its group (a leak hunt counts where its units were allocated). */
  onUnit?: (group: SuspectGroup, unit: number) => void;
}

/** Groups the reachable nodes of a snapshot into units and units into (class, holder) groups. */
export function suspectGroups(graph: HeapGraph, dominator: Uint32Array, parentEdge: Uint32Array, options: GroupOptions = {}): SuspectGroup[] {
  const n = graph.nodeCount;
  const kind = nodeKinds(graph);
  const native = graph.layout.nodeTypes.indexOf('native');
  const unit = new Int32Array(n).fill(-1);
  const near = new Uint32Array(n); // nearest dominator-or-self that is not a structural internal
  const { first, children } = dominatorChildren(dominator);
  const stack = new Uint32Array(n);
  let sp = 0;
  stack[sp++] = 0;
  while (sp > 0) {
    const v = stack[--sp] as number;
    for (let k = first[v] as number, end = first[v + 1] as number; k < end; k++) stack[sp++] = children[k] as number;
    if (v === 0) continue;
    const k = kind[v] as number;
    const d = dominator[v] as number;
    near[v] = k === STRUCT ? (near[d] as number) : v;
    // Unreachable over strong references (V8 keeps some garbage until the next GC): never counted.
    if (parentEdge[v] === 0 || k === ROOT) continue;
    const u = unit[d] as number;
    const holderKind = kind[near[d] as number] as number;
    let own: boolean;
    // A DOM node's native part belongs to its wrapper (the wrapper holds it straight). A native object the embedder's
    // internals keep for an application object (Blink's V8EventListener in an EventTarget's listener list) is a unit of
    // its own, as a listener in a JavaScript array is: folded into its target, 3,000 listeners would be a target that grew.
    if (k === APP) own = !(graph.nodeType[v] === native && u >= 0 && kind[u] === APP && kind[d] === APP);
    else if (k === STRUCT || (k === SCOPE && nodeClass(graph, v) === 'system / Context')) own = u < 0;
    else if (k === COLLECTION) own = u < 0 || !(holderKind === APP || holderKind === VALUE);
    else if (k === SCOPE) own = true;
    else own = u < 0 || !(holderKind === APP || holderKind === VALUE); // VALUE
    unit[v] = own ? v : u;
  }

  // Exclusive retained size per unit (of the counted nodes).
  const counted = options.counted;
  const excl = new Float64Array(n);
  // Detached native nodes per unit: few (a page's DOM), so a sparse map.
  const detachedIn = new Map<number, number>();
  const state = options.detached;
  for (let v = 1; v < n; v++) {
    const u = unit[v] as number;
    if (u < 0 || (counted !== undefined && counted[v] !== 1)) continue;
    (excl[u] as number) += graph.selfSize[v] as number;
    if (state !== undefined && state[v] === DETACHED && graph.nodeType[v] === native) detachedIn.set(u, (detachedIn.get(u) ?? 0) + 1);
  }

  interface Acc {
    group: SuspectGroup;
    rep: number;
  }
  const groups = new Map<string, Acc>();
  const scopes = new Map<number, ScopeInfo>();
  const holderOf = (v: number): Holder | null => {
    // (recursive once per scope: a Context's owner is a closure whose holder is found the same way)
    const h = near[dominator[v] as number] as number;
    if (h === 0 || kind[h] === ROOT) return null;
    const e = parentEdge[h] as number;
    const label = e === 0 || ['element', 'hidden'].includes(graph.layout.edgeTypes[graph.edgeType[e - 1] as number] ?? '') ? null : edgeLabel(graph, e - 1);
    // A root list's slot number (`49`) changes between snapshots: it names nothing and would split a group.
    const edge = label === null || /^\d+$/.test(label) ? null : label;
    let via: string | null = null;
    if (kind[h] === SCOPE) {
      // The variable or property of the scope that holds the unit (the unit's own incoming edge, when it comes from the holder).
      const pe = parentEdge[v] as number;
      if (pe !== 0 && edgeSource(graph, pe - 1) === h) {
        const t = graph.layout.edgeTypes[graph.edgeType[pe - 1] as number];
        if (t === 'context' || t === 'property') via = edgeLabel(graph, pe - 1);
      }
    }
    const cls = nodeClass(graph, h);
    // A variable in words: a module's or a closure's, and the script declaring it.
    let where: { script?: string; scope?: 'module' | 'closure' } = {};
    if (cls === 'system / Context' && via !== null) {
      let info = scopes.get(h);
      if (info === undefined) scopes.set(h, (info = scopeInfo(graph, h)));
      where = { ...(info.script === null ? {} : { script: info.script }), scope: info.module ? 'module' : 'closure' };
    }
    if (cls !== 'system / Context') {
      const o = unit[h] as number;
      return { class: cls, edge, via, owner: o >= 0 && o !== h && kind[o] === APP ? nodeClass(graph, o) : null };
    }
    // A scope is kept by its closure: name the closure's own holder.
    const owner = unit[h] as number;
    const outer = owner >= 0 && owner !== v && owner !== h ? holderOf(owner) : null;
    const variable = outer !== null && outer.class === 'system / Context' && outer.via !== null;
    return { class: cls, edge, via, ...where, within: outer === null ? null : { class: variable ? (outer.via as string) : outer.class, edge: outer.edge, ...(variable ? { variable: true } : {}) } };
  };
  for (let v = 1; v < n; v++) {
    if (unit[v] !== v) continue;
    // An uncounted unit is a group only where counted nodes were folded into it (an old Map's new table).
    const countsItself = counted === undefined || counted[v] === 1;
    if (!countsItself && excl[v] === 0) continue;
    const cls = nodeClass(graph, v);
    const holder = holderOf(v);
    const key = keyOf(cls, holder);
    let acc = groups.get(key);
    if (acc === undefined) {
      acc = { group: { class: cls, kind: kindOfNode(kind[v] as number, cls), holder, count: 0, selfSize: 0, retainedSize: 0, path: null }, rep: v };
      groups.set(key, acc);
    }
    if (countsItself) {
      options.onUnit?.(acc.group, v);
      acc.group.count++;
      acc.group.selfSize += graph.selfSize[v] as number;
    }
    acc.group.retainedSize += excl[v] as number;
    const d = detachedIn.get(v);
    if (d !== undefined) {
      const det = (acc.group.detached ??= { trees: 0, nodes: 0 });
      det.trees++;
      det.nodes += d;
    }
    if ((excl[v] as number) > (excl[acc.rep] as number)) acc.rep = v;
  }
  const all = [...groups.values()].sort((a, b) => b.group.retainedSize - a.group.retainedSize);
  const paths = options.paths ?? 300;
  for (let i = 0; i < Math.min(paths, all.length); i++) {
    const acc = all[i] as Acc;
    acc.group.path = retainerPath(graph, parentEdge, acc.rep) ?? null;
  }
  return all.map((a) => a.group);
}

function kindOfNode(k: number, cls: string): SuspectKind {
  if (k === APP) return 'application';
  if (k === STRUCT || k === ROOT) return 'internal';
  return classKind(cls) === 'application' ? 'builtin' : classKind(cls);
}

/** A group's identity across snapshots: its class and holder. */
export const groupKey = (g: SuspectGroup): string => keyOf(g.class, g.holder);
function keyOf(cls: string, h: Holder | null): string {
  return [cls, h?.class, h?.edge, h?.via, h?.within?.class, h?.within?.edge, h?.owner].map((x) => x ?? '').join('\u0000');
}
