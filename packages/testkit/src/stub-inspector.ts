/**
 * A stub V8 inspector: ONE HTTP server that stands in for any number of Node.js
 * targets, for load tests of the control plane (bench/scale.ts), where
 * thousands of real processes cannot run on one host.
 *
 * Every WebSocket path `/t/<anything>` is a target (its own maxRSS counter,
 * so the headroom history sees a fresh peak each time); a `node` target is
 * registered with `ws: ws://127.0.0.1:PORT/t/<id>`, so no discovery is needed.
 * `GET /json/list` lists one target (`/t/default`) for `--node HOST:PORT`.
 *
 * It answers what heapcap's capture engine sends (packages/capture/src):
 * - `Runtime.evaluate` of the preflight facts (runtime.ts), the memory probe
 *   (headroom/probe.ts), the peak RSS probe (headroom/peak.ts) and the pipe
 *   transport's directory check (pipe-transport.ts: answered ENOENT, as a
 *   target on another host would, so the capture goes over CDP);
 * - `Runtime.getHeapUsage`, `HeapProfiler.enable|disable|collectGarbage`,
 *   `Debugger.enable|disable`, `Profiler.*` (the warm step);
 * - `HeapProfiler.takeHeapSnapshot`: the snapshot as
 *   `HeapProfiler.addHeapSnapshotChunk` events (frames built once at start),
 *   then the response.
 * Anything else is answered with the inspector's "method not found" error and
 * counted in `stats().unknown`, so a test sees when the engine sends something new.
 *
 * The snapshot is synthetic but valid (a root, N objects of a few classes,
 * their string properties; the summarizer and the analysis read it), a few KB.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import WebSocket from 'ws';

export interface StubInspectorOptions {
  /** Objects in the synthetic snapshot (default 100: ~6 KB of JSON). */
  objects?: number;
  /** Snapshot text per chunk event (default 4096: a few chunks per snapshot, like a real one has many). */
  chunkBytes?: number;
  /** Delay before the first chunk, like a target's generate phase (default 0). */
  generateMs?: number;
  /** Port (default: any free one). */
  port?: number;
  /** The webSocketDebuggerUrl /json/list names (default its own `/t/default`): a hostile inspector points elsewhere. */
  listedWsUrl?: string;
  /** The target type /json/list names (default `node`; `page` to stand in for a browser tab). */
  listedType?: string;
}

/** What the stub served. */
export interface StubInspectorStats {
  connections: number;
  snapshots: number;
  /** Method → times called. */
  methods: Record<string, number>;
  /** Methods answered with "not found". */
  unknown: Record<string, number>;
  /** Snapshots requested on a target while another session's snapshot of it was running (the per-target lock failed). */
  overlaps: number;
  /** Sessions open now. */
  open: number;
}

export interface StubInspector {
  port: number;
  /** `ws://127.0.0.1:PORT/t/<id>`: the inspector URL of target `id`. */
  wsUrl(id: string): string;
  /** The snapshot every target sends (JSON text). */
  snapshot: string;
  stats(): StubInspectorStats;
  close(): Promise<void>;
}

const NODE_VERSION = 'v22.12.0';
const V8_VERSION = '12.4.254.21-node.21';
const MB = 1024 * 1024;

/** A valid heap snapshot (Node 22's header) with `objects` objects of five classes. */
export function syntheticSnapshot(objects: number): string {
  const meta = {
    node_fields: ['type', 'name', 'id', 'self_size', 'edge_count', 'trace_node_id', 'detachedness'],
    node_types: [
      ['hidden', 'array', 'string', 'object', 'code', 'closure', 'regexp', 'number', 'native', 'synthetic', 'concatenated string', 'sliced string', 'symbol', 'bigint', 'object shape'],
      'string', 'number', 'number', 'number', 'number', 'number',
    ],
    edge_fields: ['type', 'name_or_index', 'to_node'],
    edge_types: [['context', 'element', 'property', 'internal', 'hidden', 'shortcut', 'weak'], 'string_or_number', 'node'],
    trace_function_info_fields: ['function_id', 'name', 'script_name', 'script_id', 'line', 'column'],
    trace_node_fields: ['id', 'function_info_index', 'count', 'size', 'children'],
    sample_fields: ['timestamp_us', 'last_assigned_id'],
    location_fields: ['object_index', 'script_id', 'line', 'column'],
  };
  const F = meta.node_fields.length;
  const T = { object: 3, string: 2, synthetic: 9 };
  const E = { element: 1, property: 2 };
  const strings = ['', '(GC roots)', 'Session', 'Order', 'CartItem', 'Buffer', 'Request', 'value', 'payload'];
  const classes = [2, 3, 4, 5, 6];
  const nodes: number[] = [];
  const edges: number[] = [];
  // Node 0: the root, with an element edge to every object.
  nodes.push(T.synthetic, 1, 1, 0, objects, 0, 0);
  for (let i = 0; i < objects; i++) edges.push(E.element, i + 1, (1 + i) * F);
  // Objects 1..n, each with a property edge to its own string (n+1..2n).
  for (let i = 0; i < objects; i++) {
    nodes.push(T.object, classes[i % classes.length] as number, 3 + 2 * i, 32 + (i % 7) * 8, 1, 0, 0);
    edges.push(E.property, 7, (1 + objects + i) * F);
  }
  for (let i = 0; i < objects; i++) {
    strings.push(`value-${i}`);
    nodes.push(T.string, strings.length - 1, 5 + 2 * i, 24, 0, 0, 0);
  }
  const snapshot = { meta, node_count: nodes.length / F, edge_count: edges.length / 3, trace_function_count: 0 };
  // The layout V8 writes: one key per line, flat arrays.
  return (
    `{"snapshot":${JSON.stringify(snapshot)},\n"nodes":[${nodes.join(',')}],\n"edges":[${edges.join(',')}],\n` +
    `"trace_function_infos":[],\n"trace_tree":[],\n"samples":[],\n"locations":[],\n"strings":[${strings.map((s) => JSON.stringify(s)).join(',\n')}]}`
  );
}

/** The snapshot as the inspector sends it: chunk events, each a complete text frame. */
function chunkFrames(snapshot: string, chunkBytes: number): Buffer[] {
  const frames: Buffer[] = [];
  for (let i = 0; i < snapshot.length; i += chunkBytes) {
    const chunk = snapshot.slice(i, i + chunkBytes);
    frames.push(Buffer.from(`{"method":"HeapProfiler.addHeapSnapshotChunk","params":{"chunk":${JSON.stringify(chunk)}}}`));
  }
  return frames;
}

/** Which expression of the engine this is, and its answer. */
function evaluateAnswer(expression: string, target: TargetState): unknown {
  if (expression.includes('version: process.version')) return { version: NODE_VERSION, v8: V8_VERSION, pid: target.pid, platform: 'linux', arch: 'x64' };
  if (expression.includes('constrainedMemoryBytes')) {
    return {
      access: 'getBuiltinModule',
      rssBytes: 60 * MB,
      maxRssBytes: target.maxRss,
      heapLimitBytes: 2048 * MB,
      constrainedMemoryBytes: null,
      availableMemoryBytes: null,
      host: { totalBytes: 16_384 * MB, availableBytes: 8_192 * MB },
      cgroup: null,
      warnings: [],
    };
  }
  if (expression.includes('writeHeapSnapshot(path')) return { ok: false, why: 'the stub has no filesystem' };
  if (expression.includes('statSync(dir')) return { ok: false, why: 'ENOENT' };
  if (expression.includes('resourceUsage().maxRSS')) {
    // A new peak after every snapshot: the worker records the cost (headroom history), as for a real target.
    target.maxRss += MB;
    return target.maxRss;
  }
  return undefined;
}

interface TargetState {
  pid: number;
  maxRss: number;
  snapshotting: boolean;
}

const NO_RESULT_METHODS = new Set([
  'HeapProfiler.enable',
  'HeapProfiler.disable',
  'HeapProfiler.collectGarbage',
  'Debugger.disable',
  'Profiler.enable',
  'Profiler.disable',
  'Profiler.start',
  'Runtime.enable',
  'Runtime.disable',
  'Runtime.runIfWaitingForDebugger',
]);

/** Start the stub on 127.0.0.1. */
export async function startStubInspector(options: StubInspectorOptions = {}): Promise<StubInspector> {
  const snapshot = syntheticSnapshot(options.objects ?? 100);
  const frames = chunkFrames(snapshot, options.chunkBytes ?? 4096);
  const generateMs = options.generateMs ?? 0;
  const targets = new Map<string, TargetState>();
  const stats: StubInspectorStats = { connections: 0, snapshots: 0, methods: {}, unknown: {}, overlaps: 0, open: 0 };
  let nextPid = 100_000;
  const sockets = new Set<WebSocket>();

  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/json/list' || path === '/json') {
      const { port } = server.address() as AddressInfo;
      const url = options.listedWsUrl ?? `ws://127.0.0.1:${port}/t/default`;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify([{ id: 'default', type: options.listedType ?? 'node', title: 'stub', url: 'file://stub', description: 'heapcap stub inspector', webSocketDebuggerUrl: url }]));
      return;
    }
    if (path === '/json/version') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ Browser: `node.js/${NODE_VERSION}`, 'Protocol-Version': '1.1' }));
      return;
    }
    if (path === '/stats') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(stats));
      return;
    }
    res.writeHead(404).end();
  });
  const wss = new WebSocket.Server({ noServer: true, perMessageDeflate: false, maxPayload: 16 * MB });
  server.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) => {
    const m = /^\/t\/([^/?]+)$/.exec(req.url ?? '');
    if (m === null) {
      // An upgrade's socket has no error listener of Node's: a client that resets it must not crash the stub.
      socket.on('error', () => undefined);
      socket.end('HTTP/1.1 404 Not Found\r\n\r\n');
      return;
    }
    const id = decodeURIComponent(m[1] as string);
    wss.handleUpgrade(req, socket, head, (ws) => serve(ws, id));
  });

  function targetOf(id: string): TargetState {
    let t = targets.get(id);
    if (t === undefined) {
      t = { pid: nextPid++, maxRss: 80 * MB, snapshotting: false };
      targets.set(id, t);
    }
    return t;
  }

  function serve(ws: WebSocket, id: string): void {
    const target = targetOf(id);
    stats.connections++;
    stats.open++;
    sockets.add(ws);
    let mySnapshot = false;
    ws.on('close', () => {
      stats.open--;
      sockets.delete(ws);
      if (mySnapshot) target.snapshotting = false;
    });
    ws.on('error', () => undefined);
    const reply = (msg: unknown): void => {
      if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(msg));
    };
    ws.on('message', (data: WebSocket.Data) => {
      let msg: { id?: number; method?: string; params?: Record<string, unknown> };
      try {
        msg = JSON.parse(String(data)) as typeof msg;
      } catch {
        return;
      }
      const method = msg.method ?? '';
      stats.methods[method] = (stats.methods[method] ?? 0) + 1;
      const mid = msg.id;
      if (method === 'Runtime.evaluate') {
        const value = evaluateAnswer(String(msg.params?.['expression'] ?? ''), target);
        reply({ id: mid, result: { result: value === undefined ? { type: 'undefined' } : { type: typeof value === 'number' ? 'number' : 'object', value } } });
      } else if (method === 'Runtime.getHeapUsage') {
        reply({ id: mid, result: { usedSize: 12 * MB, totalSize: 20 * MB, embedderHeapUsedSize: 0, backingStorageSize: 0 } });
      } else if (method === 'Debugger.enable') {
        reply({ id: mid, result: { debuggerId: `stub-${id}` } });
      } else if (method === 'Profiler.stop') {
        reply({ id: mid, result: { profile: { nodes: [], startTime: 0, endTime: 0 } } });
      } else if (method === 'HeapProfiler.takeHeapSnapshot') {
        if (target.snapshotting) stats.overlaps++;
        target.snapshotting = true;
        mySnapshot = true;
        stats.snapshots++;
        const send = (): void => {
          for (const f of frames) if (ws.readyState === WebSocket.OPEN) ws.send(f, { binary: false });
          target.snapshotting = false;
          mySnapshot = false;
          reply({ id: mid, result: {} });
        };
        if (generateMs > 0) setTimeout(send, generateMs);
        else send();
      } else if (NO_RESULT_METHODS.has(method)) {
        reply({ id: mid, result: {} });
      } else {
        stats.unknown[method] = (stats.unknown[method] ?? 0) + 1;
        reply({ id: mid, error: { code: -32601, message: `'${method}' wasn't found` } });
      }
    });
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  // Thousands of sessions a minute: do not keep idle HTTP sockets around.
  server.keepAliveTimeout = 1_000;
  const { port } = server.address() as AddressInfo;
  let closed: Promise<void> | undefined;
  return {
    port,
    wsUrl: (id) => `ws://127.0.0.1:${port}/t/${encodeURIComponent(id)}`,
    snapshot,
    stats: () => structuredClone(stats),
    close: () =>
      (closed ??= new Promise<void>((resolve) => {
        for (const ws of sockets) ws.terminate();
        wss.close();
        server.close(() => resolve());
      })),
  };
}
