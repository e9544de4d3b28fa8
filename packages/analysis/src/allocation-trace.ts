/**
 * The allocation tracker's sections of a snapshot, read in the stream with the
 * node ids (node-ids.ts): each node's `trace_node_id`, the `trace_tree` (one
 * node per distinct allocation stack: its function and its parent) and
 * `trace_function_infos` (name, script, line, column per function), plus the
 * strings those name. Memory: the pairs (id, trace node) of the nodes
 * allocated while tracking (8 bytes each) and the tree, never the JSON.
 */
import { invalidSnapshot } from './scanner.ts';
import type { SnapshotLayout } from './snapshot-meta.ts';
import { foldStack, type TraceFrame } from './allocation-site.ts';
import type { ProfileFrame } from './profile/profile-schema.ts';
import { findPacked } from './packed-keys.ts';

/** Trace node ids above this are not kept (a pair packs id · 2^21 + trace node id into a double). */
const TRACE_ID_LIMIT = 2 ** 21;

/** What a snapshot's trace sections say: each node's stack, by node id. */
export interface AllocationTrace {
  /** Nodes the tracker gave a trace node. */
  tracedNodes: number;
  /** Function infos in the snapshot. */
  functions: number;
  /** The folded stack (top frame first) of the node with heap profiler id `id`; empty when it has none. */
  stackOf(id: number): ProfileFrame[];
}

/** Collects the trace sections while a scan runs; {@link finish} afterwards. */
export class TraceCollector {
  #pairs = new Float64Array(1024);
  #pairCount = 0;
  #infos: number[] = [];
  #infoWidth = 0;
  #infoName = -1;
  #infoScript = -1;
  #infoLine = -1;
  #infoColumn = -1;
  // The tree: per trace node id, its function info index and parent.
  readonly #fi = new Map<number, number>();
  readonly #parent = new Map<number, number>();
  #nodeWidth = 0;
  #nodeId = -1;
  #nodeFi = -1;
  #values: number[] = [];
  #parents: number[] = [];
  #last = 0;
  #wanted: number[] = [];
  #wantedAt = 0;
  readonly #strings = new Map<number, string>();

  /** From the header: the trace layouts (none: the snapshot has no trace). */
  layout(layout: SnapshotLayout, offset: number): void {
    const infos = layout.traceFunctionInfoFields;
    const nodes = layout.traceNodeFields;
    if (infos === undefined || nodes === undefined) return;
    this.#infoWidth = infos.length;
    [this.#infoName, this.#infoScript, this.#infoLine, this.#infoColumn] = ['name', 'script_name', 'line', 'column'].map((f) => infos.indexOf(f)) as [number, number, number, number];
    this.#nodeWidth = nodes.length;
    this.#nodeId = nodes.indexOf('id');
    this.#nodeFi = nodes.indexOf('function_info_index');
    // The children array is each node's last field: the other fields come first, as values.
    if (this.#infoName < 0 || this.#infoScript < 0 || this.#nodeId < 0 || this.#nodeFi < 0 || nodes.at(-1) !== 'children') {
      throw invalidSnapshot(offset, `a trace layout heapcap does not know (${JSON.stringify({ infos, nodes })})`);
    }
  }

  /** A node of `nodes`: its id and trace node id (0: not tracked). */
  node(id: number, traceNodeId: number): void {
    if (traceNodeId === 0 || traceNodeId >= TRACE_ID_LIMIT) return;
    if (this.#pairCount === this.#pairs.length) {
      const grown = new Float64Array(this.#pairs.length * 2);
      grown.set(this.#pairs);
      this.#pairs = grown;
    }
    this.#pairs[this.#pairCount++] = id * TRACE_ID_LIMIT + traceNodeId;
  }

  traceFunctionInfos(values: Float64Array, count: number): void {
    for (let k = 0; k < count; k++) this.#infos.push(values[k] as number);
  }

  traceTree(event: 'open' | 'close' | 'value', value: number): void {
    if (this.#nodeWidth === 0) return;
    if (event === 'open') this.#parents.push(this.#parents.length === 0 ? 0 : this.#last);
    else if (event === 'close') this.#parents.pop();
    else {
      this.#values.push(value);
      if (this.#values.length < this.#nodeWidth - 1) return;
      const id = this.#values[this.#nodeId] as number;
      this.#fi.set(id, this.#values[this.#nodeFi] as number);
      this.#parent.set(id, this.#parents.at(-1) ?? 0);
      this.#last = id;
      this.#values = [];
    }
  }

  /** The strings the function infos name, ascending (called when the strings table opens). */
  nextWantedString(from: number): number {
    if (this.#wantedAt === 0 && this.#wanted.length === 0 && this.#infoWidth > 0) {
      const set = new Set<number>();
      for (let i = 0; i + this.#infoWidth <= this.#infos.length; i += this.#infoWidth) {
        set.add(this.#infos[i + this.#infoName] as number);
        set.add(this.#infos[i + this.#infoScript] as number);
      }
      this.#wanted = [...set].sort((a, b) => a - b);
    }
    while (this.#wantedAt < this.#wanted.length && (this.#wanted[this.#wantedAt] as number) < from) this.#wantedAt++;
    return this.#wanted[this.#wantedAt] ?? Infinity;
  }

  string(index: number, value: string): void {
    this.#strings.set(index, value);
  }

  /** The trace, or undefined when the snapshot has none (not tracked, or V8 wrote no trace sections). */
  finish(): AllocationTrace | undefined {
    if (this.#infoWidth === 0 || this.#infos.length === 0 || this.#fi.size === 0) return undefined;
    const pairs = this.#pairs.subarray(0, this.#pairCount).sort();
    const w = this.#infoWidth;
    const infos = this.#infos;
    const frameOf = (fi: number): TraceFrame => ({
      name: this.#strings.get(infos[fi * w + this.#infoName] as number) ?? '',
      script: this.#strings.get(infos[fi * w + this.#infoScript] as number) ?? '',
      line: this.#infoLine < 0 ? 0 : (infos[fi * w + this.#infoLine] as number),
      column: this.#infoColumn < 0 ? 0 : (infos[fi * w + this.#infoColumn] as number),
    });
    const stacks = new Map<number, ProfileFrame[]>();
    const stackOfTrace = (t: number): ProfileFrame[] => {
      let stack = stacks.get(t);
      if (stack !== undefined) return stack;
      const chain: TraceFrame[] = [];
      // Up to the root (the node whose parent is 0: V8's "(root)"), top frame first.
      for (let n = t; n !== 0 && (this.#parent.get(n) ?? 0) !== 0 && chain.length < 10_000; n = this.#parent.get(n) ?? 0) chain.push(frameOf(this.#fi.get(n) ?? 0));
      stacks.set(t, (stack = foldStack(chain)));
      return stack;
    };
    return {
      tracedNodes: this.#pairCount,
      functions: infos.length / w,
      stackOf(id: number): ProfileFrame[] {
        const key = findPacked(pairs, TRACE_ID_LIMIT, id);
        return key < 0 ? [] : stackOfTrace(key - id * TRACE_ID_LIMIT);
      },
    };
  }
}
