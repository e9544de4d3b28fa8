/**
 * The `snapshot` header of a V8 heap snapshot: field layouts and type names.
 *
 * Node 20 (V8 11.3) writes node_fields [type, name, id, self_size,
 * edge_count, trace_node_id, detachedness] and edge_fields [type,
 * name_or_index, to_node]; the field list has changed across V8 versions
 * (detachedness is recent), so offsets are always read from the header.
 */
import { z } from 'zod';
import { invalidSnapshot } from './scanner.ts';

const typeList = z.array(z.string()).min(1);

const HeaderSchema = z.object({
  meta: z.object({
    node_fields: z.array(z.string()).min(1),
    node_types: z.array(z.union([typeList, z.string()])).min(1),
    edge_fields: z.array(z.string()).min(1),
    edge_types: z.array(z.union([typeList, z.string()])).min(1),
    /** With allocation tracking: the layouts of `trace_function_infos` and `trace_tree`. */
    trace_function_info_fields: z.array(z.string()).optional(),
    trace_node_fields: z.array(z.string()).optional(),
  }),
  node_count: z.number().int().nonnegative().optional(),
  edge_count: z.number().int().nonnegative().optional(),
});

/** Offsets and type tables from the header. */
export interface SnapshotLayout {
  nodeFieldCount: number;
  nodeType: number;
  nodeName: number;
  nodeId: number;
  nodeSelfSize: number;
  nodeEdgeCount: number;
  /** -1 when the snapshot has no detachedness field (older V8). */
  nodeDetachedness: number;
  /** -1 when the nodes have no trace_node_id (0 in it: allocated while nothing tracked). */
  nodeTraceNodeId: number;
  /** The header's trace layouts; undefined when it has none (V8 wrote no trace sections). */
  traceFunctionInfoFields: readonly string[] | undefined;
  traceNodeFields: readonly string[] | undefined;
  nodeTypes: readonly string[];
  edgeFieldCount: number;
  edgeType: number;
  edgeNameOrIndex: number;
  edgeToNode: number;
  edgeTypes: readonly string[];
  /** Declared counts, when the header has them. */
  nodeCount: number | undefined;
  edgeCount: number | undefined;
}

/** V8's detachedness value for a DOM node that is not attached to a document. */
export const DETACHED = 2;

/** Parse the header; `snapshot_invalid` at `offset` when it lacks what we need. */
export function parseLayout(value: unknown, offset: number): SnapshotLayout {
  const parsed = HeaderSchema.safeParse(value);
  if (!parsed.success) throw invalidSnapshot(offset, `an unusable "snapshot" header (${parsed.error.issues[0]?.message ?? 'invalid'})`);
  const { meta } = parsed.data;
  const field = (fields: string[], name: string, required = true): number => {
    const i = fields.indexOf(name);
    if (i < 0 && required) throw invalidSnapshot(offset, `the header's fields have no "${name}"`);
    return i;
  };
  const nodeTypes = meta.node_types[0];
  const edgeTypes = meta.edge_types[0];
  if (!Array.isArray(nodeTypes) || !Array.isArray(edgeTypes)) throw invalidSnapshot(offset, 'the header has no node or edge type list');
  return {
    nodeFieldCount: meta.node_fields.length,
    nodeType: field(meta.node_fields, 'type'),
    nodeName: field(meta.node_fields, 'name'),
    nodeId: field(meta.node_fields, 'id'),
    nodeSelfSize: field(meta.node_fields, 'self_size'),
    nodeEdgeCount: field(meta.node_fields, 'edge_count'),
    nodeDetachedness: field(meta.node_fields, 'detachedness', false),
    nodeTraceNodeId: field(meta.node_fields, 'trace_node_id', false),
    traceFunctionInfoFields: meta.trace_function_info_fields,
    traceNodeFields: meta.trace_node_fields,
    nodeTypes,
    edgeFieldCount: meta.edge_fields.length,
    edgeType: field(meta.edge_fields, 'type'),
    edgeNameOrIndex: field(meta.edge_fields, 'name_or_index'),
    edgeToNode: field(meta.edge_fields, 'to_node'),
    edgeTypes,
    nodeCount: parsed.data.node_count,
    edgeCount: parsed.data.edge_count,
  };
}
