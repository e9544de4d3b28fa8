/**
 * Where a scope's variables are declared, for a holder in words (`sessions`,
 * a module variable of fixtures/shapes-target.cjs): a Context's functions
 * point at their script (closure → `shared` → `script_or_debug_info` (V8 12+)
 * or `script` → a node named by the script's URL or path, checked on Node 20
 * and 22 snapshots), and a module's (or a classic script's) scope is the
 * Context whose `previous` is not another function's Context.
 */
import type { HeapGraph } from './graph.ts';
import { edgeLabel, nodeClass } from './paths.ts';

/** A scope's script (last two path segments) and whether it is a module's top-level scope. */
export interface ScopeInfo {
  script: string | null;
  module: boolean;
}

/** The target of `node`'s first edge named `name`, or -1. */
function follow(graph: HeapGraph, node: number, names: readonly string[]): number {
  for (let e = graph.firstEdge[node] as number, end = graph.firstEdge[node + 1] as number; e < end; e++) {
    if (names.includes(edgeLabel(graph, e))) return graph.edgeTo[e] as number;
  }
  return -1;
}

/** `/srv/app/src/sessions.js` → `src/sessions.js`; a URL's query and fragment are dropped. */
export function shortScript(name: string): string {
  const path = name.replace(/[?#].*$/, '');
  const parts = path.split('/').filter((p) => p !== '');
  return parts.length <= 2 ? path : parts.slice(-2).join('/');
}

/** Where the Context `ctx` was declared; cached per context by the caller. */
export function scopeInfo(graph: HeapGraph, ctx: number): ScopeInfo {
  const closure = graph.layout.nodeTypes.indexOf('closure');
  let script: string | null = null;
  for (let e = graph.firstEdge[ctx] as number, end = graph.firstEdge[ctx + 1] as number; e < end && script === null; e++) {
    const fn = graph.edgeTo[e] as number;
    if (graph.nodeType[fn] !== closure) continue;
    const shared = follow(graph, fn, ['shared']);
    const node = shared < 0 ? -1 : follow(graph, shared, ['script_or_debug_info', 'script']);
    const name = node < 0 ? '' : (graph.strings[graph.nodeName[node] as number] ?? '');
    // A script's node is named by its URL or path; other nodes there (debug info) by a class.
    // A data: URL's "path" is the page itself: no name worth printing.
    if (name.startsWith('data:')) break;
    if (name.includes('/') || name.includes('.js') || name.includes(':')) script = shortScript(name);
  }
  const previous = follow(graph, ctx, ['previous']);
  return { script, module: previous < 0 || nodeClass(graph, previous) !== 'system / Context' };
}
