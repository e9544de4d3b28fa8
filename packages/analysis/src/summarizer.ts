/**
 * The streaming summary: per-class counts and self sizes of a heap snapshot,
 * computed from its bytes as they arrive.
 *
 * Nodes come before the strings table, so classes are aggregated by name
 * *index* while the nodes stream and the names are resolved when the strings
 * arrive at the end: only the strings used as class names (and, when asked,
 * the largest strings) are ever decoded. Memory is bounded by the number of
 * distinct class names, not by the snapshot's size.
 */
import { DETACHED, parseLayout, type SnapshotLayout } from './snapshot-meta.ts';
import { invalidSnapshot, SnapshotScanner, type NumberSection, type ScanHandler } from './scanner.ts';
import { nameClass, typeGroups } from './class-name.ts';
import { SUMMARY_SCHEMA_VERSION, type ClassRow, type Summary, type SummaryOptions } from './summary-schema.ts';

/** A summarizer: feed it the snapshot's bytes in order, then `end()`. */
export interface Summarizer {
  /** The next chunk of snapshot JSON. Throws `snapshot_invalid` at the first malformed byte. */
  write(chunk: Buffer): void;
  /** After the last chunk: the summary, or `snapshot_invalid` when the snapshot is incomplete. */
  end(): Summary;
  /** Bytes consumed so far. */
  readonly bytes: number;
}

const PREVIEW_CHARS = 200;
/** Slots of the name cache in front of the class Map (a power of two, minus one). */
const CACHE_MASK = 1023;

/** Aggregates nodes by class key while they stream. */
class NodeAggregator implements ScanHandler {
  layout: SnapshotLayout | undefined;
  private groups: (string | undefined)[] = [];
  private objectType = -1;
  private nativeType = -1;
  private stringType = -1;
  // Partial node carried across batches.
  private record = new Float64Array(8);
  private field = 0;
  nodeCount = 0;
  edgeSum = 0;
  totalSelfSize = 0;
  // Classes keyed by name index (object and native nodes).
  private readonly slotOf = new Map<number, number>();
  private readonly cacheName = new Float64Array(CACHE_MASK + 1).fill(-1);
  private readonly cacheSlot = new Int32Array(CACHE_MASK + 1);
  private slotName: number[] = [];
  private slotCount: number[] = [];
  private slotSize: number[] = [];
  // Classes keyed by node type (every other type).
  private typeCount: number[] = [];
  private typeSize: number[] = [];
  // Detached native nodes by name index.
  private readonly detachedOf = new Map<number, { count: number; selfSize: number }>();
  // Largest strings: [selfSize, nameIndex] pairs, smallest first.
  private largest: [number, number][] = [];
  private readonly names = new Map<number, string>();
  // The string indexes to decode, ascending (built when the strings start), and the next one's position.
  private wanted: number[] | undefined;
  private wantedAt = 0;
  private maxNameIndex = -1;
  /** Where the scanner is (the start of the chunk being scanned), for errors found per node. */
  offset: () => number = () => 0;

  private readonly largestStrings: number;

  constructor(largestStrings: number) {
    this.largestStrings = largestStrings;
  }

  header(value: unknown, offset: number): void {
    const layout = parseLayout(value, offset);
    this.layout = layout;
    this.groups = typeGroups(layout.nodeTypes);
    this.objectType = layout.nodeTypes.indexOf('object');
    this.nativeType = layout.nodeTypes.indexOf('native');
    this.stringType = layout.nodeTypes.indexOf('string');
    this.record = new Float64Array(layout.nodeFieldCount);
    this.typeCount = layout.nodeTypes.map(() => 0);
    this.typeSize = layout.nodeTypes.map(() => 0);
  }

  wants(section: NumberSection): boolean {
    return section === 'nodes';
  }

  numbers(_section: NumberSection, values: Float64Array, count: number): void {
    const width = this.record.length;
    let k = 0;
    if (this.field !== 0) {
      // Complete the node carried over from the previous batch.
      const record = this.record;
      while (k < count && this.field < width) record[this.field++] = values[k++] as number;
      if (this.field < width) return;
      this.field = 0;
      this.nodes(record, 0, 1);
    }
    const whole = Math.floor((count - k) / width);
    this.nodes(values, k, whole);
    for (k += whole * width; k < count; k++) this.record[this.field++] = values[k] as number;
  }

  /** `n` whole nodes from `values[from..]`: the per-node hot loop, on locals. */
  private nodes(values: Float64Array, from: number, n: number): void {
    const layout = this.layout as SnapshotLayout;
    const width = layout.nodeFieldCount;
    const typeAt = layout.nodeType;
    const nameAt = layout.nodeName;
    const sizeAt = layout.nodeSelfSize;
    const edgesAt = layout.nodeEdgeCount;
    const detachedAt = layout.nodeDetachedness;
    const { objectType, nativeType, stringType, typeCount, typeSize, slotCount, slotSize, cacheName, cacheSlot } = this;
    const types = this.groups.length;
    let edgeSum = this.edgeSum;
    let total = this.totalSelfSize;
    let maxName = this.maxNameIndex;
    for (let j = 0, at = from; j < n; j++, at += width) {
      const type = values[at + typeAt] as number;
      const name = values[at + nameAt] as number;
      const size = values[at + sizeAt] as number;
      edgeSum += values[at + edgesAt] as number;
      total += size;
      if (name > maxName) maxName = name;
      if (type === objectType || type === nativeType) {
        // A class per name index; a direct-mapped cache in front of the Map (a snapshot has a few hundred class names).
        const h = name & CACHE_MASK;
        const slot = cacheName[h] === name ? (cacheSlot[h] as number) : this.slotFor(name);
        (slotCount[slot] as number)++;
        (slotSize[slot] as number) += size;
        if (type === nativeType && detachedAt >= 0 && values[at + detachedAt] === DETACHED) this.detached(name, size);
      } else if (type < types) {
        (typeCount[type] as number)++;
        (typeSize[type] as number) += size;
        if (type === stringType && this.largestStrings > 0) this.considerString(size, name);
      } else {
        this.nodeCount += j;
        throw invalidSnapshot(this.offset(), `node ${this.nodeCount} has type ${type}, beyond the header's ${types} types`);
      }
    }
    this.nodeCount += n;
    this.edgeSum = edgeSum;
    this.totalSelfSize = total;
    this.maxNameIndex = maxName;
  }

  /** The class slot of name index `name` (created on first sight), cached. */
  private slotFor(name: number): number {
    let slot = this.slotOf.get(name);
    if (slot === undefined) {
      slot = this.slotName.length;
      this.slotOf.set(name, slot);
      this.slotName.push(name);
      this.slotCount.push(0);
      this.slotSize.push(0);
    }
    const h = name & CACHE_MASK;
    this.cacheName[h] = name;
    this.cacheSlot[h] = slot;
    return slot;
  }

  private detached(name: number, size: number): void {
    const d = this.detachedOf.get(name) ?? { count: 0, selfSize: 0 };
    d.count++;
    d.selfSize += size;
    this.detachedOf.set(name, d);
  }

  private considerString(size: number, name: number): void {
    const list = this.largest;
    if (list.length === this.largestStrings && size <= (list[0] as [number, number])[0]) return;
    let at = list.findIndex((e) => e[0] >= size);
    if (at < 0) at = list.length;
    list.splice(at, 0, [size, name]);
    if (list.length > this.largestStrings) list.shift();
  }

  nextWantedString(from: number): number {
    if (this.wanted === undefined) {
      // The nodes are all in when the strings start: the names to decode are known.
      const names = new Set([...this.slotOf.keys(), ...this.detachedOf.keys(), ...this.largest.map((e) => e[1])]);
      this.wanted = [...names].sort((a, b) => a - b);
    }
    const wanted = this.wanted;
    let at = this.wantedAt;
    while (at < wanted.length && (wanted[at] as number) < from) at++;
    this.wantedAt = at;
    return at < wanted.length ? (wanted[at] as number) : Infinity;
  }

  string(index: number, value: string): void {
    this.names.set(index, value);
  }

  /** The summary once every byte was scanned. */
  result(bytes: number, edgeCount: number, strings: number): Summary {
    const layout = this.layout as SnapshotLayout;
    if (this.field !== 0) throw invalidSnapshot(bytes, `"nodes" has a partial node (${this.field} of ${layout.nodeFieldCount} fields)`);
    if (layout.nodeCount !== undefined && layout.nodeCount !== this.nodeCount) {
      throw invalidSnapshot(bytes, `the header declares ${layout.nodeCount} nodes, "nodes" has ${this.nodeCount}`);
    }
    if (this.edgeSum !== edgeCount) throw invalidSnapshot(bytes, `the nodes declare ${this.edgeSum} edges, "edges" has ${edgeCount}`);
    if (this.maxNameIndex >= strings) throw invalidSnapshot(bytes, `a node names string ${this.maxNameIndex}, the table has ${strings}`);
    const nameOf = (index: number): string => this.names.get(index) as string;
    const rows = new Map<string, ClassRow>();
    const add = (name: string, count: number, selfSize: number): void => {
      const row = rows.get(name);
      if (row === undefined) rows.set(name, { name, count, selfSize });
      else {
        row.count += count;
        row.selfSize += selfSize;
      }
    };
    this.slotName.forEach((nameIndex, slot) => add(nameClass(nameOf(nameIndex)), this.slotCount[slot] as number, this.slotSize[slot] as number));
    this.groups.forEach((group, type) => {
      const count = this.typeCount[type] as number;
      if (group !== undefined && count > 0) add(group, count, this.typeSize[type] as number);
    });
    const detached = new Map<string, ClassRow>();
    for (const [nameIndex, d] of this.detachedOf) {
      const name = nameClass(nameOf(nameIndex));
      const row = detached.get(name) ?? { name, count: 0, selfSize: 0 };
      row.count += d.count;
      row.selfSize += d.selfSize;
      detached.set(name, row);
    }
    const detachedRows = [...detached.values()];
    const summary: Summary = {
      schemaVersion: SUMMARY_SCHEMA_VERSION,
      snapshotBytes: bytes,
      nodeCount: this.nodeCount,
      edgeCount,
      totalSelfSize: this.totalSelfSize,
      classes: sortRows([...rows.values()]),
      detached:
        layout.nodeDetachedness < 0
          ? null
          : {
              count: detachedRows.reduce((s, r) => s + r.count, 0),
              selfSize: detachedRows.reduce((s, r) => s + r.selfSize, 0),
              classes: sortRows(detachedRows),
            },
    };
    if (this.largestStrings > 0) {
      summary.largestStrings = [...this.largest].reverse().map(([selfSize, nameIndex]) => {
        const text = nameOf(nameIndex);
        return { selfSize, preview: text.slice(0, PREVIEW_CHARS), length: text.length };
      });
    }
    return summary;
  }
}

/** Largest self size first, then by name, so equal inputs give byte-identical JSON. */
export function sortRows<T extends ClassRow>(rows: T[]): T[] {
  return rows.sort((a, b) => b.selfSize - a.selfSize || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** A streaming summarizer of heap snapshot JSON (see {@link Summarizer}). */
export function createSummarizer(options: SummaryOptions = {}): Summarizer {
  const aggregator = new NodeAggregator(Math.max(0, Math.floor(options.largestStrings ?? 0)));
  const scanner = new SnapshotScanner(aggregator);
  aggregator.offset = () => scanner.bytes;
  return {
    write(chunk: Buffer): void {
      scanner.write(chunk);
    },
    end(): Summary {
      const totals = scanner.end();
      const layout = aggregator.layout;
      if (layout === undefined) throw invalidSnapshot(totals.bytes, 'no "snapshot" header');
      if (totals.edgeValues % layout.edgeFieldCount !== 0) {
        throw invalidSnapshot(totals.bytes, `"edges" has ${totals.edgeValues} values, not a multiple of ${layout.edgeFieldCount}`);
      }
      return aggregator.result(totals.bytes, totals.edgeValues / layout.edgeFieldCount, totals.strings);
    },
    get bytes(): number {
      return scanner.bytes;
    },
  };
}
