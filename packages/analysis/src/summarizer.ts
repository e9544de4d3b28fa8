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
  private maxNameIndex = -1;
  /** Where the scanner is (the start of the chunk being scanned), for errors found per node. */
  offset: () => number = () => 0;

  constructor(private readonly largestStrings: number) {}

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
    const record = this.record;
    const width = record.length;
    let field = this.field;
    for (let k = 0; k < count; k++) {
      record[field++] = values[k] as number;
      if (field === width) {
        this.node(record);
        field = 0;
      }
    }
    this.field = field;
  }

  private node(record: Float64Array): void {
    const layout = this.layout as SnapshotLayout;
    const type = record[layout.nodeType] as number;
    const name = record[layout.nodeName] as number;
    const size = record[layout.nodeSelfSize] as number;
    this.nodeCount++;
    this.edgeSum += record[layout.nodeEdgeCount] as number;
    this.totalSelfSize += size;
    if (name > this.maxNameIndex) this.maxNameIndex = name;
    if (type === this.objectType || type === this.nativeType) {
      let slot = this.slotOf.get(name);
      if (slot === undefined) {
        slot = this.slotName.length;
        this.slotOf.set(name, slot);
        this.slotName.push(name);
        this.slotCount.push(0);
        this.slotSize.push(0);
      }
      (this.slotCount[slot] as number)++;
      (this.slotSize[slot] as number) += size;
      if (type === this.nativeType && layout.nodeDetachedness >= 0 && record[layout.nodeDetachedness] === DETACHED) {
        const d = this.detachedOf.get(name) ?? { count: 0, selfSize: 0 };
        d.count++;
        d.selfSize += size;
        this.detachedOf.set(name, d);
      }
    } else if (type < this.groups.length) {
      (this.typeCount[type] as number)++;
      (this.typeSize[type] as number) += size;
      if (type === this.stringType && this.largestStrings > 0) this.considerString(size, name);
    } else {
      throw invalidSnapshot(this.offset(), `node ${this.nodeCount - 1} has type ${type}, beyond the header's ${this.groups.length} types`);
    }
  }

  private considerString(size: number, name: number): void {
    const list = this.largest;
    if (list.length === this.largestStrings && size <= (list[0] as [number, number])[0]) return;
    let at = list.findIndex((e) => e[0] >= size);
    if (at < 0) at = list.length;
    list.splice(at, 0, [size, name]);
    if (list.length > this.largestStrings) list.shift();
  }

  wantString(index: number): boolean {
    return this.slotOf.has(index) || this.detachedOf.has(index) || this.largest.some((e) => e[1] === index);
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
