/**
 * The folded call tree of an allocation profile as GET
 * /v1/captures/:id/profile?format=tree answers it (one profile, or with
 * `base` the growth tree of two), and the nested form the flame graph draws.
 */

export interface TreeFrame {
  functionName: string;
  url: string;
  line: number;
  column: number;
}

export interface TreeNode {
  frame: number | null;
  parent: number;
  selfBytes: number;
  totalBytes: number;
  selfSamples: number;
  totalSamples: number;
  selfObjects: number;
  totalObjects: number;
  /** Only in a growth tree. */
  baseSelfBytes?: number;
  baseTotalBytes?: number;
  baseSelfSamples?: number;
  baseTotalSamples?: number;
}

export interface ProfileTree {
  samples: number;
  totalBytes: number;
  samplingIntervalBytes: number | null;
  frames: TreeFrame[];
  nodes: TreeNode[];
  /** Only in a growth tree: the base side's totals. */
  base?: { samples: number; totalBytes: number };
}

export interface ProfileTreeResponse {
  captureId: string;
  targetId: string;
  baseId: string | null;
  tree: ProfileTree;
}

/** A node as d3-flame-graph reads it: `value` its total bytes (the library subtracts the children's). */
export interface FlameDatum {
  name: string;
  value: number;
  /** Index into the tree's nodes: the details panel reads the node's totals from there. */
  node: number;
  children: FlameDatum[];
}

/** `createSession alloc-sites.cjs:20`: the function and the last segment of its script. */
export function frameName(tree: ProfileTree, node: TreeNode): string {
  if (node.frame === null) return 'all live allocations';
  const f = tree.frames[node.frame]!;
  const name = f.functionName === '' ? '(anonymous)' : f.functionName;
  const file = f.url.slice(f.url.lastIndexOf('/') + 1);
  return file === '' ? name : `${name} ${file}${f.line > 0 ? `:${f.line}` : ''}`;
}

/** The flat pre-order nodes as nested data (parents come before their children). */
export function nest(tree: ProfileTree): FlameDatum | undefined {
  const out: FlameDatum[] = [];
  tree.nodes.forEach((n, i) => {
    const d: FlameDatum = { name: frameName(tree, n), value: n.totalBytes, node: i, children: [] };
    out.push(d);
    if (n.parent >= 0) out[n.parent]!.children.push(d);
  });
  return out[0];
}

/** How a node of a growth tree changed, by its own (self) bytes: the allocation site grew or shrank. */
export function change(n: TreeNode): 'grown' | 'shrunk' | 'same' {
  if (n.baseSelfBytes === undefined) return 'same';
  const delta = n.selfBytes - n.baseSelfBytes;
  return delta > 0 ? 'grown' : delta < 0 ? 'shrunk' : 'same';
}
