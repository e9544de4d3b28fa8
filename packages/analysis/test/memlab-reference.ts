/**
 * The independent reference: memlab's heap parser (@memlab/core, test-only)
 * loads the same file, computes its own dominator tree and retained sizes
 * (TraceFinder), and we group its nodes with DevTools' Summary rule.
 */
import memlab from '@memlab/core';
import type { IHeapNode } from '@memlab/core';
import { nameClass } from '../src/index.ts';

/** Per class: count, self size and DevTools-style class retained size, from memlab's model. */
export interface ReferenceClass {
  count: number;
  selfSize: number;
  retainedSize: number;
}

/** What memlab says about a snapshot file. */
export interface Reference {
  nodeCount: number;
  classes: Map<string, ReferenceClass>;
  /** Nodes memlab marks detached (after its propagation), by raw class name. */
  detached: Map<string, number>;
}

memlab.config.muteConsole = true;

/** DevTools' grouping, applied to memlab's node model; memlab prefixes detached nodes' names with "Detached ". */
function classOf(node: IHeapNode): string {
  switch (node.type) {
    case 'object':
    case 'native':
      return nameClass(node.is_detached && node.name.startsWith('Detached ') ? node.name.slice('Detached '.length) : node.name);
    case 'hidden':
      return '(system)';
    case 'code':
      return '(compiled code)';
    default:
      return `(${node.type})`;
  }
}

/** Loads `file` with memlab and computes the reference numbers. */
export async function memlabReference(file: string): Promise<Reference> {
  const heap = await memlab.utils.getSnapshotFromFile(file, { buildNodeIdIndex: true });
  new memlab.TraceFinder().calculateAllNodesRetainedSizes(heap);
  const n = heap.nodes.length;
  const cls: string[] = new Array<string>(n);
  const dominator = new Uint32Array(n);
  const retained = new Float64Array(n);
  const self = new Float64Array(n);
  const classes = new Map<string, ReferenceClass>();
  const detached = new Map<string, number>();
  heap.nodes.forEach((node: IHeapNode) => {
    const i = node.nodeIndex;
    const c = classOf(node);
    cls[i] = c;
    dominator[i] = node.dominatorNode?.nodeIndex ?? 0;
    retained[i] = node.retainedSize;
    self[i] = node.self_size;
    const row = classes.get(c) ?? { count: 0, selfSize: 0, retainedSize: 0 };
    row.count++;
    row.selfSize += node.self_size;
    classes.set(c, row);
    if (node.type === 'native' && node.is_detached) detached.set(c, (detached.get(c) ?? 0) + 1);
  });
  // DevTools' class retained size over memlab's dominator tree: a node counts
  // unless a dominator of it (with a self size) already counted for its class.
  const children: number[][] = Array.from({ length: n }, () => []);
  for (let i = 1; i < n; i++) children[dominator[i] as number]?.push(i);
  const marked = new Set<string>();
  const stack: number[] = [0];
  while (stack.length > 0) {
    const entry = stack.pop() as number;
    if (entry < 0) {
      marked.delete(cls[~entry] as string);
      continue;
    }
    const c = cls[entry] as string;
    if (!marked.has(c) && (self[entry] as number) > 0) {
      (classes.get(c) as ReferenceClass).retainedSize += retained[entry] as number;
      marked.add(c);
      stack.push(~entry);
    }
    for (const child of children[entry] ?? []) stack.push(child);
  }
  return { nodeCount: n, classes, detached };
}
