/**
 * Retainer paths: the shortest chain of references from the snapshot's root to
 * a node, found by one breadth-first walk. The root's `shortcut` edges (the
 * global objects) are walked first, so a path goes through the global that
 * holds an object rather than through V8's internal root lists when both are
 * equally short. Weak edges and non-root shortcuts are not references that
 * keep anything alive, so they are never part of a path.
 */
import type { HeapGraph } from './graph.ts';
import { edgeTypeIndex } from './dominators.ts';
import { nameClass, typeGroup } from './class-name.ts';

/** One step of a retainer path: the edge taken and the node it reaches. */
export interface PathStep {
  /** Property name, `[index]` for elements, or the internal edge name. */
  edge: string;
  edgeType: string;
  /** Node id (stable across snapshots of one process while heap profiler ids are kept). */
  id: number;
  /** The node's class (constructor name or group). */
  class: string;
  /** Function name of a closure, or the name of a synthetic root group; absent for other types (a string's text is never put in a path). */
  name?: string;
}

/** Parent edge (index + 1; 0 = none) of every node on a shortest path from the root. */
export function shortestPathTree(graph: HeapGraph): Uint32Array {
  const { nodeCount, firstEdge, edgeTo, edgeType } = graph;
  const weak = edgeTypeIndex(graph, 'weak');
  const shortcut = edgeTypeIndex(graph, 'shortcut');
  const parentEdge = new Uint32Array(nodeCount);
  const seen = new Uint8Array(nodeCount);
  const queue = new Uint32Array(nodeCount);
  let head = 0;
  let tail = 0;
  seen[0] = 1;
  const visitRoot = (wantShortcut: boolean): void => {
    for (let e = firstEdge[0] as number; e < (firstEdge[1] as number); e++) {
      const to = edgeTo[e] as number;
      const type = edgeType[e] as number;
      if (type === weak || (type === shortcut) !== wantShortcut || seen[to] !== 0) continue;
      seen[to] = 1;
      parentEdge[to] = e + 1;
      queue[tail++] = to;
    }
  };
  visitRoot(true);
  visitRoot(false);
  while (head < tail) {
    const node = queue[head++] as number;
    for (let e = firstEdge[node] as number, end = firstEdge[node + 1] as number; e < end; e++) {
      const to = edgeTo[e] as number;
      const type = edgeType[e] as number;
      if (seen[to] !== 0 || type === weak || type === shortcut) continue;
      seen[to] = 1;
      parentEdge[to] = e + 1;
      queue[tail++] = to;
    }
  }
  return parentEdge;
}

/**
 * The node an edge starts from: the last node whose first edge is at or before
 * it (nodes without edges share their offset with the next node, and the last
 * of such a run is the one that owns the edge). No per-edge array needed.
 */
export function edgeSource(graph: HeapGraph, edge: number): number {
  let lo = 0;
  let hi = graph.nodeCount - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >>> 1;
    if ((graph.firstEdge[mid] as number) <= edge) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** The name of an edge as DevTools shows it. */
export function edgeLabel(graph: HeapGraph, edge: number): string {
  const typeName = graph.layout.edgeTypes[graph.edgeType[edge] as number] ?? '?';
  const name = graph.edgeName[edge] as number;
  if (typeName === 'element' || typeName === 'hidden') return `[${name}]`;
  return graph.strings[name] ?? `<string ${name}>`;
}

/** The class of a node (same rule as the summary). */
export function nodeClass(graph: HeapGraph, node: number): string {
  const typeName = graph.layout.nodeTypes[graph.nodeType[node] as number] ?? '?';
  return typeGroup(typeName) ?? nameClass(graph.strings[graph.nodeName[node] as number] as string);
}

/** Steps kept at each end of a long path (a linked list can make a path of millions of steps). */
const PATH_END_STEPS = 40;

/**
 * The path root → … → `node`, or undefined when `node` is unreachable from the
 * root. A path longer than 2 × 40 steps keeps 40 at each end, with one step of
 * edge type `elided` between them saying how many were left out.
 */
export function retainerPath(graph: HeapGraph, parentEdge: Uint32Array, node: number): PathStep[] | undefined {
  const step = (at: number, edge: number): PathStep => {
    const typeName = graph.layout.nodeTypes[graph.nodeType[at] as number];
    return {
      edge: edgeLabel(graph, edge),
      edgeType: graph.layout.edgeTypes[graph.edgeType[edge] as number] ?? '?',
      id: graph.nodeId[at] as number,
      class: nodeClass(graph, at),
      ...(typeName === 'closure' || typeName === 'synthetic' ? { name: graph.strings[graph.nodeName[at] as number] as string } : {}),
    };
  };
  // Walk from the node up to the root: the first steps met are the node's end;
  // a ring buffer keeps the last ones met (the root's end). The BFS tree has no
  // cycles, so the walk ends.
  const nodeEnd: PathStep[] = [];
  const rootEnd: PathStep[] = [];
  let walked = 0;
  let at = node;
  while (at !== 0) {
    const e = parentEdge[at] as number;
    if (e === 0) return undefined;
    const edge = e - 1;
    if (nodeEnd.length < PATH_END_STEPS) nodeEnd.push(step(at, edge));
    else rootEnd[(walked - PATH_END_STEPS) % PATH_END_STEPS] = step(at, edge);
    walked++;
    at = edgeSource(graph, edge);
  }
  const beyond = walked - PATH_END_STEPS; // steps that went to the ring buffer
  if (beyond <= 0) return nodeEnd.reverse();
  // The ring buffer in walk order (oldest first), then reversed to root-first.
  const ring = beyond <= PATH_END_STEPS ? rootEnd.slice(0, beyond) : [...rootEnd.slice(beyond % PATH_END_STEPS), ...rootEnd.slice(0, beyond % PATH_END_STEPS)];
  const elided = beyond - ring.length;
  return [
    ...ring.reverse(),
    ...(elided > 0 ? [{ edge: `${elided} steps`, edgeType: 'elided', id: 0, class: '…' }] : []),
    ...nodeEnd.reverse(),
  ];
}

/** A path as one line for people, e.g. `(root) → .2 global → .leaks Array → [3] Leaked`. */
export function formatPath(steps: readonly PathStep[]): string {
  const parts = steps.map((s) => {
    if (s.edgeType === 'elided') return `… (${s.edge} elided)`;
    const edge = s.edgeType === 'element' || s.edgeType === 'hidden' ? s.edge : `.${s.edge}`;
    const target = s.name === undefined || s.name === '' ? s.class : s.class === '(closure)' ? `${s.name}()` : s.name;
    return `${edge} ${target}`;
  });
  return ['(root)', ...parts].join(' → ');
}

/** V8's and Blink's own references: a short path leaves them out. */
const INTERNAL_EDGES = new Set(['map', 'table', 'context', 'shared', 'previous', 'scope_info', 'native_context', 'feedback_cell', 'elements', 'properties', '__proto__', 'global_proxy', 'code', 'script_or_debug_info']);

/**
 * A path in the application's own names: the properties and variables on the
 * way, each with its class, then the object itself (`sessions (Map) →
 * SessionRecord`, `handlers (Array) → req (IncomingRequest)`); engine steps
 * (roots, tables, contexts, element indexes) are left out. The whole path is
 * {@link formatPath}'s.
 */
export function shortPath(steps: readonly PathStep[]): string {
  const last = steps.length - 1;
  const named = steps.filter(
    (s, i) => i === last || ((s.edgeType === 'property' || s.edgeType === 'context') && !/^\d+$/.test(s.edge) && !INTERNAL_EDGES.has(s.edge) && !s.class.startsWith('system /') && s.class !== '(system)'),
  );
  return named.map((s, i) => (i === named.length - 1 && !(s.edgeType === 'property' || s.edgeType === 'context') ? s.class : `${s.edge} (${s.class})`)).join(' → ');
}
