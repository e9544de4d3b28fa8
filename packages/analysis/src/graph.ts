/**
 * A heap snapshot as typed arrays: one entry per node and per edge, the
 * strings table, nothing else. Built by the streaming scanner, so the JSON
 * text is never held: memory is the arrays below (bytes per node and per edge
 * in {@link graphBytes}) plus the strings.
 */
import { invalidSnapshot, SnapshotScanner, type NumberSection, type ScanHandler } from './scanner.ts';
import { parseLayout, type SnapshotLayout } from './snapshot-meta.ts';

/** The loaded graph. Node ordinal = position in `nodes` / field count; edges of node i are firstEdge[i]..firstEdge[i+1]. */
export interface HeapGraph {
  layout: SnapshotLayout;
  nodeCount: number;
  edgeCount: number;
  snapshotBytes: number;
  nodeType: Uint8Array;
  nodeName: Uint32Array;
  nodeId: Uint32Array;
  /** Float64: a single ArrayBuffer's backing store can exceed 4 GiB. */
  selfSize: Float64Array;
  firstEdge: Uint32Array;
  /** V8's detachedness per node (0 unknown, 1 attached, 2 detached); all zero when the snapshot has none. */
  detachedness: Uint8Array;
  edgeType: Uint8Array;
  /** String index (named edge types) or element index (element, hidden). */
  edgeName: Uint32Array;
  /** Target node ordinal. */
  edgeTo: Uint32Array;
  strings: string[];
}

/** Bytes the graph's typed arrays take per node and per edge (strings excluded). */
export function graphBytes(): { perNode: number; perEdge: number } {
  // type 1 + name 4 + id 4 + selfSize 8 + firstEdge 4 + detachedness 1
  return { perNode: 22, perEdge: 9 };
}

/** Builds a {@link HeapGraph} from scanner callbacks. */
class GraphBuilder implements ScanHandler {
  layout: SnapshotLayout | undefined;
  graph: Omit<HeapGraph, 'snapshotBytes'> | undefined;
  offset: () => number = () => 0;

  private readonly checkSize: (nodes: number, edges: number) => void;

  constructor(checkSize: (nodes: number, edges: number) => void) {
    this.checkSize = checkSize;
  }

  header(value: unknown, offset: number): void {
    const layout = parseLayout(value, offset);
    if (layout.nodeCount === undefined || layout.edgeCount === undefined) {
      throw invalidSnapshot(offset, 'the header has no node_count/edge_count (needed to size the analysis)');
    }
    this.checkSize(layout.nodeCount, layout.edgeCount);
    const n = layout.nodeCount;
    const e = layout.edgeCount;
    this.layout = layout;
    this.graph = {
      layout,
      nodeCount: n,
      edgeCount: e,
      nodeType: new Uint8Array(n),
      nodeName: new Uint32Array(n),
      nodeId: new Uint32Array(n),
      selfSize: new Float64Array(n),
      firstEdge: new Uint32Array(n + 1),
      detachedness: new Uint8Array(n),
      edgeType: new Uint8Array(e),
      edgeName: new Uint32Array(e),
      edgeTo: new Uint32Array(e),
      strings: [],
    };
  }

  wants(): boolean {
    return true;
  }

  numbers(section: NumberSection, values: Float64Array, count: number): void {
    if (section === 'nodes') this.nodeNumbers(values, count);
    else this.edgeNumbers(values, count);
  }

  // Position of the next value: which node/edge and which of its fields.
  private node = 0;
  private nodeField = 0;
  private edge = 0;
  private edgeField = 0;

  private nodeNumbers(values: Float64Array, count: number): void {
    const g = this.graph as NonNullable<GraphBuilder['graph']>;
    const L = g.layout;
    const width = L.nodeFieldCount;
    let node = this.node;
    let field = this.nodeField;
    if (node * width + field + count > g.nodeCount * width) throw invalidSnapshot(this.offset(), `"nodes" has more than the ${g.nodeCount} nodes the header declares`);
    for (let k = 0; k < count; k++) {
      const v = values[k] as number;
      if (field === L.nodeType) {
        if (v >= L.nodeTypes.length) throw invalidSnapshot(this.offset(), `node ${node} has type ${v}, beyond the header's ${L.nodeTypes.length} types`);
        g.nodeType[node] = v;
      } else if (field === L.nodeName) g.nodeName[node] = v;
      else if (field === L.nodeId) g.nodeId[node] = v;
      else if (field === L.nodeSelfSize) g.selfSize[node] = v;
      else if (field === L.nodeEdgeCount) g.firstEdge[node + 1] = v; // counts now, prefix sums in finish()
      else if (field === L.nodeDetachedness) g.detachedness[node] = v;
      if (++field === width) {
        field = 0;
        node++;
      }
    }
    this.node = node;
    this.nodeField = field;
  }

  private edgeNumbers(values: Float64Array, count: number): void {
    const g = this.graph as NonNullable<GraphBuilder['graph']>;
    const L = g.layout;
    const width = L.edgeFieldCount;
    const nodeWidth = L.nodeFieldCount;
    let edge = this.edge;
    let field = this.edgeField;
    if (edge * width + field + count > g.edgeCount * width) throw invalidSnapshot(this.offset(), `"edges" has more than the ${g.edgeCount} edges the header declares`);
    for (let k = 0; k < count; k++) {
      const v = values[k] as number;
      if (field === L.edgeType) {
        if (v >= L.edgeTypes.length) throw invalidSnapshot(this.offset(), `edge ${edge} has type ${v}, beyond the header's ${L.edgeTypes.length} types`);
        g.edgeType[edge] = v;
      } else if (field === L.edgeNameOrIndex) g.edgeName[edge] = v;
      else if (field === L.edgeToNode) {
        const to = v / nodeWidth;
        if (!Number.isInteger(to) || to >= g.nodeCount) throw invalidSnapshot(this.offset(), `edge ${edge} points to ${v}, not a node`);
        g.edgeTo[edge] = to;
      }
      if (++field === width) {
        field = 0;
        edge++;
      }
    }
    this.edge = edge;
    this.edgeField = field;
  }

  nextWantedString(from: number): number {
    return from; // all of them: the analysis names every node and edge
  }

  string(index: number, value: string): void {
    (this.graph as NonNullable<GraphBuilder['graph']>).strings[index] = value;
  }

  /** Checks counts and turns edge counts into first-edge offsets. */
  finish(bytes: number): HeapGraph {
    const g = this.graph;
    if (g === undefined) throw invalidSnapshot(bytes, 'no "snapshot" header');
    const L = g.layout;
    // Node 0 is the root every analysis starts from; V8 always writes it.
    if (g.nodeCount === 0) throw invalidSnapshot(bytes, 'the snapshot has no nodes (not even the root)');
    if (this.node !== g.nodeCount || this.nodeField !== 0) throw invalidSnapshot(bytes, `"nodes" has ${this.node * L.nodeFieldCount + this.nodeField} values, the header declares ${g.nodeCount} nodes`);
    if (this.edge !== g.edgeCount || this.edgeField !== 0) throw invalidSnapshot(bytes, `"edges" has ${this.edge * L.edgeFieldCount + this.edgeField} values, the header declares ${g.edgeCount} edges`);
    const first = g.firstEdge;
    for (let i = 0; i < g.nodeCount; i++) (first[i + 1] as number) += first[i] as number;
    if (first[g.nodeCount] !== g.edgeCount) throw invalidSnapshot(bytes, `the nodes declare ${first[g.nodeCount]} edges, "edges" has ${g.edgeCount}`);
    const strings = g.strings.length;
    for (let i = 0; i < g.nodeCount; i++) {
      if ((g.nodeName[i] as number) >= strings) throw invalidSnapshot(bytes, `node ${i} names string ${g.nodeName[i]}, the table has ${strings}`);
    }
    return { ...g, snapshotBytes: bytes };
  }
}

/** An incremental graph loader: feed chunks, then `end()`. */
export interface GraphLoader {
  write(chunk: Buffer): void;
  end(): HeapGraph;
  readonly bytes: number;
}

/** Creates a loader; `checkSize` runs on the header's counts before anything is allocated. */
export function createGraphLoader(checkSize: (nodes: number, edges: number) => void = () => {}): GraphLoader {
  const builder = new GraphBuilder(checkSize);
  const scanner = new SnapshotScanner(builder);
  builder.offset = () => scanner.bytes;
  return {
    write: (chunk) => scanner.write(chunk),
    end: () => builder.finish(scanner.end().bytes),
    get bytes() {
      return scanner.bytes;
    },
  };
}
