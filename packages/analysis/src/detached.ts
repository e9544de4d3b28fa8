/**
 * Detached DOM nodes the way DevTools and memlab count them: V8 records the
 * state only on embedder entry points; it is then propagated to connected
 * native nodes (attached first, then detached), never through JavaScript
 * objects and never over hidden, invisible or weak edges.
 */
import { DETACHED } from './snapshot-meta.ts';
import type { HeapGraph } from './graph.ts';
import { sortRows } from './summarizer.ts';
import { nameClass } from './class-name.ts';
import type { Analysis } from './analysis-schema.ts';

const ATTACHED = 1;

/** The detachedness of every node after propagation. */
export function propagateDetachedness(graph: HeapGraph): Uint8Array {
  const { nodeCount, firstEdge, edgeTo, edgeType, nodeType } = graph;
  const state = graph.detachedness.slice();
  const native = graph.layout.nodeTypes.indexOf('native');
  const skip = new Set(['hidden', 'invisible', 'weak'].map((t) => graph.layout.edgeTypes.indexOf(t)).filter((i) => i >= 0));
  const visited = new Uint8Array(nodeCount);
  const attached: number[] = [];
  const detached: number[] = [];
  const set = (node: number, value: number): void => {
    if (visited[node] !== 0) return;
    visited[node] = 1;
    if (nodeType[node] !== native) return;
    state[node] = value;
    if (value === ATTACHED) attached.push(node);
    else if (value === DETACHED) detached.push(node);
  };
  const propagate = (node: number, value: number): void => {
    for (let e = firstEdge[node] as number, end = firstEdge[node + 1] as number; e < end; e++) {
      if (!skip.has(edgeType[e] as number)) set(edgeTo[e] as number, value);
    }
  };
  for (let i = 0; i < nodeCount; i++) if (state[i] !== 0) set(i, state[i] as number);
  while (attached.length > 0) propagate(attached.pop() as number, ATTACHED);
  while (detached.length > 0) {
    const node = detached.pop() as number;
    if (state[node] !== ATTACHED) propagate(node, DETACHED);
  }
  return state;
}

/** The propagated state, or undefined when the snapshot has no detachedness field (Node.js). */
export function detachedState(graph: HeapGraph): Uint8Array | undefined {
  return graph.layout.nodeDetachedness < 0 ? undefined : propagateDetachedness(graph);
}

/** Detached native nodes per class, or null when the snapshot has no detachedness field; `state` is detachedState(graph) when computed already. */
export function detachedClasses(graph: HeapGraph, state: Uint8Array | undefined = detachedState(graph)): Analysis['detached'] {
  if (state === undefined) return null;
  const native = graph.layout.nodeTypes.indexOf('native');
  const rows = new Map<string, { name: string; count: number; selfSize: number }>();
  let count = 0;
  let selfSize = 0;
  for (let i = 0; i < graph.nodeCount; i++) {
    if (state[i] !== DETACHED || graph.nodeType[i] !== native) continue;
    const name = nameClass(graph.strings[graph.nodeName[i] as number] as string);
    const row = rows.get(name) ?? { name, count: 0, selfSize: 0 };
    row.count++;
    row.selfSize += graph.selfSize[i] as number;
    rows.set(name, row);
    count++;
    selfSize += graph.selfSize[i] as number;
  }
  return { count, selfSize, classes: sortRows([...rows.values()]) };
}
