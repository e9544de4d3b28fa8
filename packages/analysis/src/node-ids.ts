/**
 * The node ids of a snapshot, streamed (nothing else is kept), as a sorted
 * array of keys `id · 65536 + signature`: a membership test by id, and a
 * 16-bit signature of the node's type, self size and edge count to tell
 * whether an id still names the same object in another snapshot.
 */
import { invalidSnapshot, SnapshotScanner, type NumberSection, type ScanHandler } from './scanner.ts';
import { parseLayout, type SnapshotLayout } from './snapshot-meta.ts';
import { checkSnapshotSize, readSnapshot, snapshotFileInfo } from './source.ts';
import { TraceCollector, type AllocationTrace } from './allocation-trace.ts';
import { findPacked } from './packed-keys.ts';

const ID_SCALE = 65536;

/** Sorted id keys of one snapshot. */
export interface NodeIdSet {
  keys: Float64Array;
  layout: SnapshotLayout;
  /** With `trace`: the snapshot's allocation stacks by node id (undefined when it has no trace sections). */
  trace?: AllocationTrace | undefined;
}

class IdCollector implements ScanHandler {
  layout: SnapshotLayout | undefined;
  keys = new Float64Array(0);
  private record = new Float64Array(0);
  private field = 0;
  count = 0;

  readonly trace: TraceCollector | undefined;

  constructor(trace: TraceCollector | undefined) {
    this.trace = trace;
    if (trace !== undefined) {
      this.traceFunctionInfos = (values, count) => trace.traceFunctionInfos(values, count);
      this.traceTree = (event, value) => trace.traceTree(event, value);
    }
  }

  traceFunctionInfos?: ScanHandler['traceFunctionInfos'];
  traceTree?: ScanHandler['traceTree'];

  header(value: unknown, offset: number): void {
    const layout = parseLayout(value, offset);
    if (layout.nodeCount === undefined) throw invalidSnapshot(offset, 'the header has no node_count');
    this.layout = layout;
    this.trace?.layout(layout, offset);
    this.keys = new Float64Array(layout.nodeCount);
    this.record = new Float64Array(layout.nodeFieldCount);
  }

  wants(section: NumberSection): boolean {
    return section === 'nodes';
  }

  numbers(_section: NumberSection, values: Float64Array, count: number): void {
    const L = this.layout as SnapshotLayout;
    const record = this.record;
    const width = record.length;
    for (let k = 0; k < count; k++) {
      record[this.field++] = values[k] as number;
      if (this.field < width) continue;
      this.field = 0;
      if (this.count >= this.keys.length) throw invalidSnapshot(0, `"nodes" has more than the ${this.keys.length} nodes the header declares`);
      this.keys[this.count++] = (record[L.nodeId] as number) * ID_SCALE + signatureOf(record[L.nodeType] as number, record[L.nodeSelfSize] as number, record[L.nodeEdgeCount] as number);
      if (this.trace !== undefined && L.nodeTraceNodeId >= 0) this.trace.node(record[L.nodeId] as number, record[L.nodeTraceNodeId] as number);
    }
  }

  nextWantedString(from: number): number {
    return this.trace?.nextWantedString(from) ?? Infinity;
  }

  string(index: number, value: string): void {
    this.trace?.string(index, value);
  }
}

/** Reads only the node ids (and signatures) of a snapshot file; with `trace`, its allocation stacks too (allocation-trace.ts). */
export async function readNodeIds(path: string, maxBytes: number, options: { trace?: boolean } = {}): Promise<NodeIdSet> {
  const info = await snapshotFileInfo(path);
  await checkSnapshotSize(info, maxBytes);
  const collector = new IdCollector(options.trace === true ? new TraceCollector() : undefined);
  const scanner = new SnapshotScanner(collector);
  await readSnapshot(info, (chunk) => scanner.write(chunk), maxBytes);
  const totals = scanner.end();
  const layout = collector.layout;
  if (layout === undefined || collector.count !== collector.keys.length) throw invalidSnapshot(totals.bytes, `"nodes" does not have the ${collector.keys.length} nodes the header declares`);
  collector.keys.sort();
  return { keys: collector.keys, layout, trace: collector.trace?.finish() };
}

/** The key of `id` in the set, or -1. */
export function findId(set: NodeIdSet, id: number): number {
  return findPacked(set.keys, ID_SCALE, id);
}


/** The signature part of a key (type and size class). */
export function signature(key: number): number {
  return key % ID_SCALE;
}

/** Signature of a node: a 16-bit hash of its type, self size and edge count. */
export function signatureOf(type: number, selfSize: number, edgeCount: number): number {
  let h = Math.imul(type + 1, 0x9e3779b1) ^ Math.imul(selfSize % 0x7fffffff, 0x85ebca6b) ^ Math.imul(edgeCount + 7, 0xc2b2ae35);
  h ^= h >>> 16;
  return (h >>> 0) % ID_SCALE;
}

/**
 * Of the nodes of `later` whose id also appears in `earlier`, how many have
 * the same signature there. With heap profiler ids kept, an id names the same
 * object in both (most objects keep their size and edge count); after the ids
 * were cleared, V8 hands the same numbers out again in traversal order, often
 * to objects of the same type, which is why the signature includes more.
 */
export function idAgreement(earlier: NodeIdSet, later: NodeIdSet): { common: number; agreeing: number } {
  let common = 0;
  let agreeing = 0;
  const step = Math.max(1, Math.floor(later.keys.length / 20_000));
  for (let i = 0; i < later.keys.length; i += step) {
    const key = later.keys[i] as number;
    const found = findId(earlier, Math.floor(key / ID_SCALE));
    if (found < 0) continue;
    common++;
    if (signature(found) === signature(key)) agreeing++;
  }
  return { common, agreeing };
}
