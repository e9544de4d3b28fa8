/**
 * A sampling heap profile as its folded call tree (flame graphs), and the
 * growth tree of two profiles. Built from `attributeSamples`' stacks, the
 * ones the summary counts, so every leaf is an allocation site with the
 * summary's bytes for it.
 */
import { attributeSamples, checkSamplingProfile, frameKey, objectsOfSample, type AttributedProfile } from './profile-tree.ts';
import { PROFILE_SUMMARY_SCHEMA_VERSION, type ProfileFrame } from './profile-schema.ts';
import type { ProfileTree, ProfileTreeDiff, ProfileTreeDiffNode, ProfileTreeNode } from './profile-tree-schema.ts';

/** Per side: self and total bytes, samples, objects. */
interface Totals {
  selfBytes: number;
  totalBytes: number;
  selfSamples: number;
  totalSamples: number;
  selfObjects: number;
  totalObjects: number;
}

interface Building {
  frame: number | null;
  children: Map<number, Building>;
  /** [head, base]; a plain tree uses only the head. */
  sides: [Totals, Totals];
}

const zero = (): Totals => ({ selfBytes: 0, totalBytes: 0, selfSamples: 0, totalSamples: 0, selfObjects: 0, totalObjects: 0 });

/** Frames interned across both sides by their identity. */
class FrameTable {
  readonly frames: ProfileFrame[] = [];
  private readonly index = new Map<string, number>();
  intern(f: ProfileFrame): number {
    const key = frameKey(f);
    let i = this.index.get(key);
    if (i === undefined) {
      i = this.frames.length;
      this.frames.push(f);
      this.index.set(key, i);
    }
    return i;
  }
}

/** Adds one side's samples to the tree, each along its folded stack from the root to its site. */
function addSide(root: Building, table: FrameTable, attributed: AttributedProfile, side: 0 | 1, intervalBytes: number | undefined): void {
  const local = attributed.frames.map((f) => table.intern(f));
  // Samples of one node share one stack array: its path is walked once.
  const paths = new Map<number[], Building[]>();
  for (const s of attributed.samples) {
    let path = paths.get(s.stack);
    if (path === undefined) {
      path = [root];
      let at = root;
      for (let i = s.stack.length - 1; i >= 0; i--) {
        const frame = local[s.stack[i]!]!;
        let child = at.children.get(frame);
        if (child === undefined) {
          child = { frame, children: new Map(), sides: [zero(), zero()] };
          at.children.set(frame, child);
        }
        path.push(child);
        at = child;
      }
      paths.set(s.stack, path);
    }
    const objects = intervalBytes === undefined ? 1 : objectsOfSample(s.size, intervalBytes);
    for (const node of path) {
      const t = node.sides[side];
      t.totalBytes += s.size;
      t.totalSamples += 1;
      t.totalObjects += objects;
    }
    const self = path[path.length - 1]!.sides[side];
    self.selfBytes += s.size;
    self.selfSamples += 1;
    self.selfObjects += objects;
  }
}

/** Pre-order, children by head total bytes, then base total, then frame (equal inputs give equal outputs). */
function flatten<T>(root: Building, table: FrameTable, emit: (node: Building, parent: number) => T): T[] {
  const out: T[] = [];
  const key = (b: Building): string => (b.frame === null ? '' : frameKey(table.frames[b.frame]!));
  const work: { node: Building; parent: number }[] = [{ node: root, parent: -1 }];
  for (let item = work.pop(); item !== undefined; item = work.pop()) {
    const index = out.length;
    out.push(emit(item.node, item.parent));
    const children = [...item.node.children.values()].sort(
      (a, b) => b.sides[0].totalBytes - a.sides[0].totalBytes || b.sides[1].totalBytes - a.sides[1].totalBytes || key(a).localeCompare(key(b)),
    );
    // Pushed in reverse so the largest child is emitted first.
    for (let i = children.length - 1; i >= 0; i--) work.push({ node: children[i]!, parent: index });
  }
  return out;
}

function headNode(b: Building, parent: number): ProfileTreeNode {
  const t = b.sides[0];
  return { frame: b.frame, parent, ...t, selfObjects: Math.round(t.selfObjects), totalObjects: Math.round(t.totalObjects) };
}

function attributed(value: unknown): AttributedProfile {
  return attributeSamples(checkSamplingProfile(value));
}

const newRoot = (): Building => ({ frame: null, children: new Map(), sides: [zero(), zero()] });

/** The folded call tree of a SamplingHeapProfile (`profile_invalid` when it is not one). */
export function profileTree(value: unknown, options: { samplingIntervalBytes?: number | undefined } = {}): ProfileTree {
  const a = attributed(value);
  const root = newRoot();
  const table = new FrameTable();
  addSide(root, table, a, 0, options.samplingIntervalBytes);
  return {
    schemaVersion: PROFILE_SUMMARY_SCHEMA_VERSION,
    samples: root.sides[0].totalSamples,
    totalBytes: root.sides[0].totalBytes,
    samplingIntervalBytes: options.samplingIntervalBytes ?? null,
    frames: table.frames,
    nodes: flatten(root, table, headNode),
  };
}

/** The growth tree from `base` to `head`: head's totals per folded path beside the base's (`profile_invalid` when either is not a profile). */
export function profileTreeDiff(baseProfile: unknown, headProfile: unknown, options: { samplingIntervalBytes?: number | undefined } = {}): ProfileTreeDiff {
  const base = attributed(baseProfile);
  const head = attributed(headProfile);
  const root = newRoot();
  const table = new FrameTable();
  addSide(root, table, head, 0, options.samplingIntervalBytes);
  addSide(root, table, base, 1, options.samplingIntervalBytes);
  const nodes = flatten(root, table, (b, parent): ProfileTreeDiffNode => {
    const t = b.sides[1];
    return { ...headNode(b, parent), baseSelfBytes: t.selfBytes, baseTotalBytes: t.totalBytes, baseSelfSamples: t.selfSamples, baseTotalSamples: t.totalSamples };
  });
  return {
    schemaVersion: PROFILE_SUMMARY_SCHEMA_VERSION,
    samples: root.sides[0].totalSamples,
    totalBytes: root.sides[0].totalBytes,
    samplingIntervalBytes: options.samplingIntervalBytes ?? null,
    base: { samples: root.sides[1].totalSamples, totalBytes: root.sides[1].totalBytes },
    frames: table.frames,
    nodes,
  };
}
