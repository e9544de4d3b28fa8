/**
 * Reading a V8 SamplingHeapProfile (`{head, samples}`, what
 * `HeapProfiler.getSamplingProfile`/`stopSampling` answer and DevTools loads
 * as `.heapprofile`): checked without recursion (deep stacks make deep trees),
 * then each sampled allocation attributed to its allocation site and folded
 * stack.
 */
import { CaptureError } from '@heapcap/errors';
import type { ProfileFrame } from './profile-schema.ts';

/** A call frame as V8 gives it (0-based positions, -1 when unknown). */
export interface ProfileCallFrame {
  functionName: string;
  scriptId?: string | number;
  url: string;
  lineNumber: number;
  columnNumber: number;
}

/** A node of the call tree; `selfSize` is the scaled bytes of its samples. */
export interface ProfileNode {
  callFrame: ProfileCallFrame;
  selfSize: number;
  id: number;
  children: ProfileNode[];
}

/** One sampled allocation still alive: its scaled size and the node that allocated it. */
export interface ProfileSample {
  size: number;
  nodeId: number;
  ordinal?: number;
}

/** The SamplingHeapProfile: the `.heapprofile` schema. */
export interface SamplingHeapProfile {
  head: ProfileNode;
  samples: ProfileSample[];
}

/** One sampled allocation, attributed. */
export interface AttributedSample {
  size: number;
  /** Index into `frames` of its allocation site. */
  site: number;
  /** Indexes into `frames`, site first, root last (the root itself left out). */
  stack: number[];
}

/** A profile's samples attributed to interned frames. */
export interface AttributedProfile {
  frames: ProfileFrame[];
  samples: AttributedSample[];
  nodes: number;
}

function invalid(message: string): CaptureError {
  return new CaptureError('profile_invalid', `not a V8 sampling heap profile: ${message}`, {
    hint: 'give the JSON that HeapProfiler.stopSampling or getSamplingProfile answered (a .heapprofile: {head, samples}), not a heap snapshot',
  });
}

function isRecord(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

/** Checks the shape of every node and sample (iteratively); throws `profile_invalid` naming what is wrong. */
export function checkSamplingProfile(value: unknown): SamplingHeapProfile {
  if (!isRecord(value) || !isRecord(value.head) || !Array.isArray(value.samples)) throw invalid('it has no head node and samples list');
  const stack: unknown[] = [value.head];
  for (let node = stack.pop(); node !== undefined; node = stack.pop()) {
    if (!isRecord(node) || !isRecord(node.callFrame) || typeof node.id !== 'number' || typeof node.selfSize !== 'number' || !Array.isArray(node.children)) {
      throw invalid('a call-tree node lacks callFrame, id, selfSize or children');
    }
    const f = node.callFrame;
    if (typeof f.functionName !== 'string' || typeof f.url !== 'string' || typeof f.lineNumber !== 'number' || typeof f.columnNumber !== 'number') {
      throw invalid(`node ${node.id}'s callFrame lacks functionName, url, lineNumber or columnNumber`);
    }
    for (const child of node.children as unknown[]) stack.push(child);
  }
  for (const s of value.samples as unknown[]) {
    if (!isRecord(s) || typeof s.size !== 'number' || !(s.size >= 0) || typeof s.nodeId !== 'number') throw invalid('a sample lacks size or nodeId');
  }
  return value as unknown as SamplingHeapProfile;
}

/**
 * Frames that are not where the user's code allocated: Node's own modules
 * (`node:internal/…`, `node:fs`) and builtins V8 gives without a script
 * (`repeat`, `push`: the allocation belongs to the function that called
 * them). Parenthesised entries ("(V8 API)", "(BYTECODE_COMPILER)") have no
 * caller and stay as sites.
 */
export function isFoldedFrame(f: ProfileCallFrame): boolean {
  if (f.url.startsWith('node:')) return true;
  return f.url === '' && !f.functionName.startsWith('(');
}

/** The frame as heapcap reports it: 1-based positions, 0 when V8 gives none. */
function toFrame(f: ProfileCallFrame): ProfileFrame {
  return { functionName: f.functionName, url: f.url, line: f.lineNumber >= 0 ? f.lineNumber + 1 : 0, column: f.columnNumber >= 0 ? f.columnNumber + 1 : 0 };
}

/** A frame's identity: the site it names. */
export function frameKey(f: ProfileFrame): string {
  return `${f.functionName}\u0000${f.url}\u0000${f.line}\u0000${f.column}`;
}

/** The site of samples whose node is not in the tree. */
const UNKNOWN_NODE: ProfileCallFrame = { functionName: '(node not in the profile)', url: '', lineNumber: -1, columnNumber: -1 };

/** A chain of kept (unfolded) frames, innermost first, shared by a node's descendants. */
interface Chain {
  frame: number;
  parent: Chain | undefined;
}

/**
 * Attributes every sample to its site and folded stack. The site is the
 * innermost frame that is not folded; a stack of folded frames only (Node's
 * bootstrap) keeps its innermost frame.
 */
export function attributeSamples(profile: SamplingHeapProfile): AttributedProfile {
  const frames: ProfileFrame[] = [];
  const index = new Map<string, number>();
  const intern = (f: ProfileCallFrame): number => {
    const frame = toFrame(f);
    const key = frameKey(frame);
    let i = index.get(key);
    if (i === undefined) {
      i = frames.length;
      frames.push(frame);
      index.set(key, i);
    }
    return i;
  };
  // Per node id: its site and folded stack (only nodes that samples name are kept).
  const sampled = new Set(profile.samples.map((s) => s.nodeId));
  const byNode = new Map<number, { site: number; stack: number[] }>();
  let nodes = 0;
  const work: { node: ProfileNode; chain: Chain | undefined; root: boolean }[] = [{ node: profile.head, chain: undefined, root: true }];
  for (let item = work.pop(); item !== undefined; item = work.pop()) {
    const { node, root } = item;
    nodes += 1;
    let chain = item.chain;
    if (!root && !isFoldedFrame(node.callFrame)) chain = { frame: intern(node.callFrame), parent: chain };
    if (sampled.has(node.id)) {
      const stack: number[] = [];
      for (let c = chain; c !== undefined; c = c.parent) stack.push(c.frame);
      if (stack.length === 0) stack.push(intern(node.callFrame));
      byNode.set(node.id, { site: stack[0]!, stack });
    }
    for (const child of node.children) work.push({ node: child, chain, root: false });
  }
  // Seen on Node 20 and 22: getSamplingProfile's samples now and then name a node its tree does not hold
  // (a handful of 1,000+). They are kept, under a site of their own, so the totals stay those of the samples.
  let unknown: { site: number; stack: number[] } | undefined;
  const samples = profile.samples.map((s): AttributedSample => {
    let at = byNode.get(s.nodeId);
    if (at === undefined) {
      const site = intern(UNKNOWN_NODE);
      at = unknown ??= { site, stack: [site] };
    }
    return { size: s.size, site: at.site, stack: at.stack };
  });
  return { frames, samples, nodes };
}

/**
 * Objects one sample stands for. V8 records an allocation of `s` bytes with
 * probability 1 - e^(-s/R) (R the interval) and reports it scaled: size
 * Y = s / (1 - e^(-s/R)). Y grows with s, so s is found by bisection and the
 * count is Y / s. Y <= R (not a scaled sample) counts one.
 */
export function objectsOfSample(size: number, intervalBytes: number): number {
  if (!(size > intervalBytes)) return 1;
  const scaled = (s: number): number => s / -Math.expm1(-s / intervalBytes);
  let lo = 0;
  let hi = size;
  for (let i = 0; i < 64; i++) {
    const mid = (lo + hi) / 2;
    if (scaled(mid) < size) lo = mid;
    else hi = mid;
  }
  const s = (lo + hi) / 2;
  return s > 0 ? size / s : 1;
}
