/**
 * Dominator tree and retained sizes, Lengauer–Tarjan on typed arrays, with the
 * edge rules Chrome DevTools and memlab (`TraceFinder`) use:
 *
 * - the tree is rooted at the snapshot's synthetic root (node 0), whose
 *   children are `(GC roots)`, the other synthetic root groups, and (through
 *   `shortcut` edges) the global objects;
 * - `weak` edges never retain; `shortcut` edges retain only from the root
 *   (elsewhere they duplicate a real path, e.g. a bound function's target);
 *   self edges are ignored;
 * - "page-owned" nodes (reachable from the root's non-shortcut children,
 *   except the `(Document DOM trees)` group, over non-weak edges) are retained
 *   only through other page-owned nodes, so references the debugger adds do not
 *   change what dominates an application object;
 * - nodes unreachable over those edges are attached to the root: first those
 *   whose every retainer is weak or a shortcut (each with its own subtree),
 *   then any remaining cycle of mutually retaining nodes.
 *
 * memlab 2.0.5 seeds the page-owned marking this way; DevTools seeds it the
 * other way round (from the root's shortcut edges and `(Document DOM trees)`).
 * We follow memlab, the independent parser our tests compare against; on the
 * snapshots measured the two agree on the largest classes.
 */
import type { HeapGraph } from './graph.ts';

/** The dominator tree: immediate dominator and retained size per node ordinal. */
export interface Dominators {
  /** Immediate dominator ordinal; the root (0) dominates itself. */
  dominator: Uint32Array;
  retained: Float64Array;
  /** Bytes of temporary arrays the computation needed per node and per edge (freed on return). */
  scratchBytes: { perNode: number; perEdge: number };
}

const ROOT = 0;

/** Edge type indexes by name; -1 when the snapshot has no such type. */
export function edgeTypeIndex(graph: HeapGraph, name: string): number {
  return graph.layout.edgeTypes.indexOf(name);
}

/** Marks the nodes reachable from the root's ordinary children (memlab's flagReachableNodesFromWindow). */
function pageOwned(graph: HeapGraph): Uint8Array {
  const { nodeCount, firstEdge, edgeTo, edgeType } = graph;
  const weak = edgeTypeIndex(graph, 'weak');
  const shortcut = edgeTypeIndex(graph, 'shortcut');
  const element = edgeTypeIndex(graph, 'element');
  const synthetic = graph.layout.nodeTypes.indexOf('synthetic');
  const flags = new Uint8Array(nodeCount);
  const rootEdges = (firstEdge[ROOT + 1] as number) - (firstEdge[ROOT] as number);
  const stack = new Uint32Array(nodeCount + rootEdges);
  let len = 0;
  for (let e = firstEdge[ROOT] as number; e < (firstEdge[ROOT + 1] as number); e++) {
    const to = edgeTo[e] as number;
    const type = edgeType[e] as number;
    if (type === element) {
      if (graph.nodeType[to] === synthetic && graph.strings[graph.nodeName[to] as number] === '(Document DOM trees)') continue;
    } else if (type === shortcut) continue;
    stack[len++] = to;
    flags[to] = 1;
  }
  while (len > 0) {
    const node = stack[--len] as number;
    for (let e = firstEdge[node] as number, end = firstEdge[node + 1] as number; e < end; e++) {
      const child = edgeTo[e] as number;
      if (flags[child] !== 0 || edgeType[e] === weak) continue;
      stack[len++] = child;
      flags[child] = 1;
    }
  }
  return flags;
}

/** Computes immediate dominators and retained sizes of every node. */
export function computeDominators(graph: HeapGraph): Dominators {
  const { nodeCount, firstEdge, edgeTo, edgeType, edgeCount } = graph;
  const weak = edgeTypeIndex(graph, 'weak');
  const shortcut = edgeTypeIndex(graph, 'shortcut');
  const flags = pageOwned(graph);
  const essential = (from: number, type: number, to: number): boolean =>
    from !== to && type !== weak && (type !== shortcut || from === ROOT) && !(from !== ROOT && flags[to] !== 0 && flags[from] === 0);

  // Reverse index of the essential edges (predecessors), and which nodes have
  // a retainer that is neither weak nor a shortcut (memlab's hasOnlyWeakReferrers).
  const predFirst = new Uint32Array(nodeCount + 1);
  const strongRef = new Uint8Array(nodeCount);
  let essentialCount = 0;
  for (let from = 0; from < nodeCount; from++) {
    for (let e = firstEdge[from] as number, end = firstEdge[from + 1] as number; e < end; e++) {
      const to = edgeTo[e] as number;
      const type = edgeType[e] as number;
      if (type !== weak && type !== shortcut) strongRef[to] = 1;
      if (essential(from, type, to)) {
        (predFirst[to + 1] as number)++;
        essentialCount++;
      }
    }
  }
  for (let i = 0; i < nodeCount; i++) (predFirst[i + 1] as number) += predFirst[i] as number;
  const pred = new Uint32Array(essentialCount);
  {
    const cursor = predFirst.slice(0, nodeCount);
    for (let from = 0; from < nodeCount; from++) {
      for (let e = firstEdge[from] as number, end = firstEdge[from + 1] as number; e < end; e++) {
        const to = edgeTo[e] as number;
        if (essential(from, edgeType[e] as number, to)) pred[(cursor[to] as number)++] = from;
      }
    }
  }

  // Lengauer–Tarjan, vertices numbered 1..nodeCount (0 = none); vertex v is node v - 1.
  const size = nodeCount + 1;
  const parent = new Uint32Array(size);
  const ancestor = new Uint32Array(size);
  const vertex = new Uint32Array(size);
  const label = new Uint32Array(size);
  const semi = new Uint32Array(size);
  const dom = new Uint32Array(size);
  const bucketHead = new Uint32Array(size);
  const bucketNext = new Uint32Array(size);
  const nextEdge = new Uint32Array(nodeCount);
  const compressStack = new Uint32Array(size);
  let n = 0;

  const dfs = (start: number): void => {
    nextEdge[start - 1] = firstEdge[start - 1] as number;
    let v = start;
    while (v !== 0) {
      if (semi[v] === 0) {
        semi[v] = ++n;
        vertex[n] = v;
        label[v] = v;
      }
      let next = parent[v] as number;
      const from = v - 1;
      const end = firstEdge[from + 1] as number;
      for (let e = nextEdge[from] as number; e < end; e++) {
        const to = edgeTo[e] as number;
        if (!essential(from, edgeType[e] as number, to)) continue;
        const w = to + 1;
        if (semi[w] === 0) {
          parent[w] = v;
          nextEdge[to] = firstEdge[to] as number;
          nextEdge[from] = e + 1;
          next = w;
          break;
        }
        nextEdge[from] = e + 1;
      }
      if (next === parent[v]) nextEdge[from] = end;
      v = next;
    }
  };

  const compress = (start: number): void => {
    let v = start;
    let sp = 0;
    while (ancestor[ancestor[v] as number] !== 0) {
      compressStack[++sp] = v;
      v = ancestor[v] as number;
    }
    while (sp > 0) {
      const w = compressStack[sp--] as number;
      const a = ancestor[w] as number;
      if ((semi[label[a] as number] as number) < (semi[label[w] as number] as number)) label[w] = label[a] as number;
      ancestor[w] = ancestor[a] as number;
    }
  };
  const evaluate = (v: number): number => {
    if (ancestor[v] === 0) return v;
    compress(v);
    return label[v] as number;
  };

  const r = ROOT + 1;
  dfs(r);
  if (n < nodeCount) {
    for (let v = 1; v <= nodeCount; v++) {
      if (semi[v] === 0 && strongRef[v - 1] === 0) {
        parent[v] = r;
        dfs(v);
      }
    }
  }
  if (n < nodeCount) {
    for (let v = 1; v <= nodeCount; v++) {
      if (semi[v] === 0) {
        parent[v] = r;
        semi[v] = ++n;
        vertex[n] = v;
        label[v] = v;
      }
    }
  }

  for (let i = n; i >= 2; i--) {
    const w = vertex[i] as number;
    const node = w - 1;
    const pFrom = predFirst[node] as number;
    const pEnd = predFirst[node + 1] as number;
    if (pFrom === pEnd) semi[w] = semi[r] as number; // an orphan: retained by the root
    for (let p = pFrom; p < pEnd; p++) {
      const u = evaluate((pred[p] as number) + 1);
      if ((semi[u] as number) < (semi[w] as number)) semi[w] = semi[u] as number;
    }
    const s = vertex[semi[w] as number] as number;
    bucketNext[w] = bucketHead[s] as number;
    bucketHead[s] = w;
    const pw = parent[w] as number;
    ancestor[w] = pw; // link
    for (let v = bucketHead[pw] as number; v !== 0; v = bucketNext[v] as number) {
      const u = evaluate(v);
      dom[v] = (semi[u] as number) < (semi[v] as number) ? u : pw;
    }
    bucketHead[pw] = 0;
  }
  dom[0] = r;
  dom[r] = r;
  for (let i = 2; i <= n; i++) {
    const w = vertex[i] as number;
    if (dom[w] !== vertex[semi[w] as number]) dom[w] = dom[dom[w] as number] as number;
  }

  const dominator = new Uint32Array(nodeCount);
  const retained = new Float64Array(nodeCount);
  for (let i = 0; i < nodeCount; i++) {
    dominator[i] = (dom[i + 1] as number) - 1;
    retained[i] = graph.selfSize[i] as number;
  }
  for (let i = n; i > 1; i--) {
    const node = (vertex[i] as number) - 1;
    (retained[dominator[node] as number] as number) += retained[node] as number;
  }
  return {
    dominator,
    retained,
    // flags 1, strongRef 1, predFirst 4, ten Uint32Arrays of LT state 40; pred 4 per essential edge.
    scratchBytes: { perNode: 46, perEdge: edgeCount === 0 ? 0 : (essentialCount * 4) / edgeCount },
  };
}
