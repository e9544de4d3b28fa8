/**
 * `analyzeSnapshotFile`: load a snapshot into typed arrays, compute the
 * dominator tree, retained sizes per class and the retainer paths of the
 * largest dominators.
 */
import { createGraphLoader, graphBytes, type HeapGraph } from './graph.ts';
import { computeDominators } from './dominators.ts';
import { classify, classRetainedSizes } from './classes.ts';
import { nodeClass, retainerPath, shortestPathTree } from './paths.ts';
import { detachedClasses, detachedState } from './detached.ts';
import { suspectGroups } from './suspects.ts';
import { checkSnapshotSize, readSnapshot, snapshotFileInfo } from './source.ts';
import { invalidSnapshot } from './scanner.ts';
import { ANALYSIS_SCHEMA_VERSION, type Analysis, type DominatorEntry } from './analysis-schema.ts';

/** Options of {@link analyzeSnapshotFile}. */
export interface AnalyzeOptions {
  /** Refuse snapshots with more JSON bytes than this (`analysis_too_large`), before loading them. */
  maxBytes: number;
  /** How many of the largest dominators to report with their paths (default 20). */
  topDominators?: number;
  /** False: skip the suspects' grouping (`groups` absent): bench/suspects.ts measures what it costs against this. */
  groups?: boolean;
}

/** Loads a snapshot file (plain or gzipped) into a graph; refuses it above `maxBytes`. */
export async function loadSnapshotGraph(path: string, maxBytes: number): Promise<HeapGraph> {
  const info = await snapshotFileInfo(path);
  await checkSnapshotSize(info, maxBytes);
  const loader = createGraphLoader((nodes, edges) => {
    // A valid snapshot spends at least two bytes ("0,") per value: bigger counts are a corrupt header, not a reason to allocate.
    if (!info.gzip && nodes * 2 + edges * 2 > info.jsonBytes) {
      throw invalidSnapshot(info.jsonBytes, `the file ends early or its header is corrupt: the header declares ${nodes} nodes and ${edges} edges, more than ${info.jsonBytes} bytes can hold`);
    }
  });
  await readSnapshot(info, (chunk) => loader.write(chunk), maxBytes);
  return loader.end();
}

/** Analyses a loaded graph (see {@link analyzeSnapshotFile}). */
export function analyzeGraph(graph: HeapGraph, topDominators = 20, withGroups = true): Analysis {
  const { dominator, retained, scratchBytes } = computeDominators(graph);
  const classes = classify(graph);
  const classRetained = classRetainedSizes(classes, dominator, retained, graph.selfSize);
  const count = new Float64Array(classes.names.length);
  const self = new Float64Array(classes.names.length);
  let totalSelfSize = 0;
  for (let i = 0; i < graph.nodeCount; i++) {
    const c = classes.classOf[i] as number;
    (count[c] as number)++;
    (self[c] as number) += graph.selfSize[i] as number;
    totalSelfSize += graph.selfSize[i] as number;
  }
  const rows = classes.names
    .map((name, c) => ({ name, count: count[c] as number, selfSize: self[c] as number, retainedSize: classRetained[c] as number }))
    .filter((row) => row.count > 0); // node types without nodes
  rows.sort((a, b) => b.retainedSize - a.retainedSize || b.selfSize - a.selfSize || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));

  const parentEdge = shortestPathTree(graph);
  const dominators: DominatorEntry[] = largestDominators(graph, retained, topDominators).map((node) => ({
    id: graph.nodeId[node] as number,
    class: nodeClass(graph, node),
    selfSize: graph.selfSize[node] as number,
    retainedSize: retained[node] as number,
    path: retainerPath(graph, parentEdge, node) ?? null,
  }));

  // Once for both: the class table of detached nodes and the suspects' detached trees.
  const detached = detachedState(graph);
  const stringBytes = graph.strings.reduce((s, x) => s + 2 * x.length + 16, 0);
  const kept = graphBytes();
  return {
    schemaVersion: ANALYSIS_SCHEMA_VERSION,
    snapshotBytes: graph.snapshotBytes,
    nodeCount: graph.nodeCount,
    edgeCount: graph.edgeCount,
    totalSelfSize,
    classes: rows,
    dominators,
    detached: detachedClasses(graph, detached),
    ...(withGroups ? { groups: suspectGroups(graph, dominator, parentEdge, { detached }) } : {}),
    memory: {
      // Graph arrays + dominator, retained sizes, class ids and path tree (4 + 8 + 4 + 4) + the dominator computation's scratch
      // (the suspects' grouping, 29 bytes per node, runs after it and needs less).
      bytesPerNode: kept.perNode + 20 + scratchBytes.perNode,
      bytesPerEdge: kept.perEdge + scratchBytes.perEdge,
      stringBytes,
    },
  };
}

/** The `top` non-synthetic nodes with the largest retained sizes, largest first. */
function largestDominators(graph: HeapGraph, retained: Float64Array, top: number): number[] {
  const synthetic = graph.layout.nodeTypes.indexOf('synthetic');
  const best: number[] = [];
  for (let i = 0; i < graph.nodeCount; i++) {
    if (graph.nodeType[i] === synthetic) continue;
    const r = retained[i] as number;
    if (best.length === top && r <= (retained[best[best.length - 1] as number] as number)) continue;
    let at = best.length;
    while (at > 0 && (retained[best[at - 1] as number] as number) < r) at--;
    best.splice(at, 0, i);
    if (best.length > top) best.pop();
  }
  return best;
}

/** Analyses a `.heapsnapshot` or `.heapsnapshot.gz` file; refuses files above `maxBytes` before loading them. */
export async function analyzeSnapshotFile(path: string, options: AnalyzeOptions): Promise<Analysis> {
  const graph = await loadSnapshotGraph(path, options.maxBytes);
  return analyzeGraph(graph, options.topDominators ?? 20, options.groups ?? true);
}
