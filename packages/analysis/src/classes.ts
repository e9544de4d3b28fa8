/**
 * Classes of a loaded graph (the same grouping as the streaming summary) and
 * their retained sizes the way DevTools' Summary computes them: a node's
 * retained size counts for its class unless a dominator of it already belongs
 * to the same class (so nested instances are not counted twice).
 */
import { nameClass, typeGroups } from './class-name.ts';
import type { HeapGraph } from './graph.ts';

/** Class id per node and the class names. */
export interface Classes {
  classOf: Uint32Array;
  names: string[];
}

/** Assigns every node its class. */
export function classify(graph: HeapGraph): Classes {
  const groups = typeGroups(graph.layout.nodeTypes);
  const ids = new Map<string, number>();
  const names: string[] = [];
  const idOf = (name: string): number => {
    let id = ids.get(name);
    if (id === undefined) {
      id = names.length;
      ids.set(name, id);
      names.push(name);
    }
    return id;
  };
  const byType = groups.map((g) => (g === undefined ? -1 : idOf(g)));
  const byName = new Map<number, number>();
  const classOf = new Uint32Array(graph.nodeCount);
  for (let i = 0; i < graph.nodeCount; i++) {
    const t = byType[graph.nodeType[i] as number] as number;
    if (t >= 0) {
      classOf[i] = t;
      continue;
    }
    const nameIndex = graph.nodeName[i] as number;
    let id = byName.get(nameIndex);
    if (id === undefined) {
      id = idOf(nameClass(graph.strings[nameIndex] as string));
      byName.set(nameIndex, id);
    }
    classOf[i] = id;
  }
  return { classOf, names };
}

/** Children lists of the dominator tree, as offsets into one array. */
export function dominatorChildren(dominator: Uint32Array): { first: Uint32Array; children: Uint32Array } {
  const n = dominator.length;
  const first = new Uint32Array(n + 1);
  for (let i = 1; i < n; i++) (first[(dominator[i] as number) + 1] as number)++;
  for (let i = 0; i < n; i++) (first[i + 1] as number) += first[i] as number;
  const cursor = first.slice(0, n);
  const children = new Uint32Array(Math.max(0, n - 1));
  for (let i = 1; i < n; i++) children[(cursor[dominator[i] as number] as number)++] = i;
  return { first, children };
}

/** Retained size per class, each node counted only under its outermost same-class dominator. */
export function classRetainedSizes(classes: Classes, dominator: Uint32Array, retained: Float64Array, selfSize: Float64Array): Float64Array {
  const out = new Float64Array(classes.names.length);
  const n = dominator.length;
  if (n === 0) return out;
  const { first, children } = dominatorChildren(dominator);
  // 1 while a counted node of the class is on the current root→node path of the tree walk.
  const onPath = new Uint8Array(classes.names.length);
  // Iterative DFS: a node is pushed once; a negative entry (~node) marks leaving it.
  const stack = new Int32Array(2 * n + 1);
  let sp = 0;
  stack[sp++] = 0;
  while (sp > 0) {
    const entry = stack[--sp] as number;
    if (entry < 0) {
      onPath[classes.classOf[~entry] as number] = 0;
      continue;
    }
    const c = classes.classOf[entry] as number;
    // As DevTools: zero-size nodes (the root, synthetic groups) neither count nor hide their class below them.
    if (onPath[c] === 0 && (selfSize[entry] as number) > 0) {
      (out[c] as number) += retained[entry] as number;
      onPath[c] = 1;
      stack[sp++] = ~entry;
    }
    for (let k = first[entry] as number, end = first[entry + 1] as number; k < end; k++) stack[sp++] = children[k] as number;
  }
  return out;
}
