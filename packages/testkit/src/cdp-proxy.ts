/**
 * A WebSocket proxy in front of a target's inspector that watches CDP calls
 * from the target's side of the wire: a call is in flight from the moment its
 * request passes until its response (or its connection closes). Tests register
 * the target with the proxy's ws:// URL and count what reached the target, e.g.
 * `maxInFlight() === 1`: no two snapshots ever reached it at once; or
 * `calls('Runtime.getHeapUsage')`: how often a watcher sampled it.
 */
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import WebSocket from 'ws';

const SNAPSHOT = 'HeapProfiler.takeHeapSnapshot';
/** The methods that make the target write a whole snapshot: stopTrackingHeapObjects streams one (a hunt's target snapshot when it tracked allocations). */
const SNAPSHOT_METHODS = new Set([SNAPSHOT, 'HeapProfiler.stopTrackingHeapObjects']);

/** What the proxy saw. */
export interface CdpProxy {
  /** ws:// URL to register as the target. */
  url: string;
  /** Requests of `method` forwarded so far. */
  calls(method: string): number;
  /** Snapshot requests forwarded so far (takeHeapSnapshot, and stopTrackingHeapObjects, which streams one). */
  snapshotCalls(): number;
  /** Completed snapshot calls (a response came back; stopTrackingHeapObjects counts: it streams a whole snapshot). */
  snapshotsCompleted(): number;
  /** The largest number of takeHeapSnapshot calls in flight at once. */
  maxInFlight(): number;
  /** takeHeapSnapshot calls in flight now. */
  inFlight(): number;
  /** Connections opened through the proxy so far. */
  connections(): number;
  /** Requests of `method` forwarded so far, per connection (in the order they opened). */
  callsPerConnection(method: string): number[];
  /**
   * From now on, hold what `what` names until release(): `connect`, each new connection's WebSocket
   * handshake (the capturer sits in its `connect` phase); else a CDP method, each request of it
   * (e.g. `Debugger.enable`: the capturer sits in `warm`); with `matching`, only the requests of it whose
   * text contains `matching` (e.g. the `Runtime.evaluate` that calls `writeHeapSnapshot`). A slow inspector,
   * not an error: nothing is dropped.
   */
  hold(what: 'connect' | (string & {}), matching?: string): void;
  /** How many handshakes or requests wait on hold now. */
  held(): number;
  /** Stop holding and let everything held through, in order. */
  release(): void;
  /** Close every connection and the server. Idempotent. */
  close(): Promise<void>;
}

interface Frame {
  id?: number;
  method?: string;
}

/** How the proxy misbehaves on purpose. */
export interface CdpProxyOptions {
  /** Drop the connection (both ends) when a request of this method arrives, instead of forwarding it: the target "closed" mid-call. */
  closeOn?: string;
  /** Answer requests of this method with the inspector's "method not found" error instead of forwarding them: a runtime whose inspector lacks it. */
  refuse?: string;
  /**
   * Called with each request's method just before it is forwarded: a test can act at that exact point
   * (e.g. SIGSTOP the target as its takeHeapSnapshot goes out, so the capturer sits in `generate`).
   */
  onRequest?: (method: string) => void;
  /**
   * Called with each event's method (target to client) just before it is forwarded: e.g. SIGSTOP the
   * target at its first HeapProfiler.addHeapSnapshotChunk, so the capturer sits in `serialize` with bytes.
   */
  onEvent?: (method: string) => void;
}

/** Start a proxy to `upstreamWsUrl` on 127.0.0.1 (a free port). */
export async function startCdpProxy(upstreamWsUrl: string, options: CdpProxyOptions = {}): Promise<CdpProxy> {
  const http: Server = createServer((_req, res) => res.writeHead(404).end());
  let holding: string | undefined;
  let holdingText: string | undefined;
  const waiting: (() => void)[] = [];
  const wss = new WebSocket.Server({
    server: http,
    verifyClient: (info: { req: { socket: { destroy(): void } } }, accept: (ok: boolean) => void) => {
      // A target that is gone: this proxy stops listening, so the next connection is refused as the dead target's
      // own port refuses it, and this one is dropped. (An HTTP 502 here read as a busy target to the worker's
      // settle wait, which held the lock for its whole bound; a dead port reads as gone.)
      const answer = (): void =>
        void upstreamListening(upstreamWsUrl).then((up) => {
          if (up) return accept(true);
          http.close();
          info.req.socket.destroy();
        });
      if (holding === 'connect') waiting.push(answer);
      else answer();
    },
  });
  const calls = new Map<string, number>();
  let opened = 0;
  let completed = 0;
  let inFlight = 0;
  let max = 0;
  const sockets = new Set<WebSocket>();
  const perConnection: Map<string, number>[] = [];
  wss.on('connection', (client) => {
    opened++;
    const mine = new Map<string, number>();
    perConnection.push(mine);
    const upstream = new WebSocket(upstreamWsUrl, { perMessageDeflate: false });
    sockets.add(client);
    sockets.add(upstream);
    const pending = new Set<number>();
    const queued: string[] = [];
    const end = (): void => {
      // A dropped connection abandons its calls (the target may still be busy: that is what settle covers).
      inFlight -= pending.size;
      pending.clear();
      client.terminate();
      upstream.terminate();
    };
    client.on('message', (data) => {
      const text = data.toString();
      const frame = JSON.parse(text) as Frame;
      if (frame.method !== undefined) {
        calls.set(frame.method, (calls.get(frame.method) ?? 0) + 1);
        mine.set(frame.method, (mine.get(frame.method) ?? 0) + 1);
      }
      if (frame.method !== undefined && frame.method === options.closeOn) {
        end();
        return;
      }
      if (frame.method !== undefined && frame.method === options.refuse && frame.id !== undefined) {
        client.send(JSON.stringify({ id: frame.id, error: { code: -32601, message: `'${frame.method}' wasn't found` } }));
        return;
      }
      if (frame.method !== undefined && frame.method === holding && (holdingText === undefined || text.includes(holdingText))) {
        waiting.push(() => forward(frame, text));
        return;
      }
      forward(frame, text);
    });
    const forward = (frame: Frame, text: string): void => {
      if (frame.method !== undefined) options.onRequest?.(frame.method);
      if (frame.method !== undefined && SNAPSHOT_METHODS.has(frame.method) && frame.id !== undefined) {
        pending.add(frame.id);
        inFlight++;
        max = Math.max(max, inFlight);
      }
      if (upstream.readyState === WebSocket.OPEN) upstream.send(text);
      else queued.push(text);
    };
    upstream.on('open', () => {
      for (const q of queued.splice(0)) upstream.send(q);
    });
    upstream.on('message', (data) => {
      const text = data.toString();
      // Cheap check first: chunk events are large and never carry a top-level id.
      if (text.startsWith(EVENT_PREFIX)) {
        options.onEvent?.(text.slice(EVENT_PREFIX.length, text.indexOf('"', EVENT_PREFIX.length)));
      } else {
        const frame = JSON.parse(text) as Frame;
        if (frame.id !== undefined && pending.delete(frame.id)) {
          inFlight--;
          completed++;
        }
      }
      if (client.readyState === WebSocket.OPEN) client.send(text);
    });
    client.on('close', end);
    upstream.on('close', end);
    client.on('error', end);
    upstream.on('error', end);
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  let closing: Promise<void> | undefined;
  return {
    url: `ws://127.0.0.1:${port}/proxy`,
    calls: (method) => calls.get(method) ?? 0,
    snapshotCalls: () => [...SNAPSHOT_METHODS].reduce((n, m) => n + (calls.get(m) ?? 0), 0),
    snapshotsCompleted: () => completed,
    maxInFlight: () => max,
    inFlight: () => inFlight,
    connections: () => opened,
    callsPerConnection: (method) => perConnection.map((m) => m.get(method) ?? 0),
    hold: (what, matching) => {
      holding = what;
      holdingText = matching;
    },
    held: () => waiting.length,
    release: () => {
      holding = undefined;
      for (const go of waiting.splice(0)) go();
    },
    close: () =>
      (closing ??= (async () => {
        holding = undefined;
        waiting.length = 0;
        for (const s of sockets) s.terminate();
        await new Promise<void>((resolve) => wss.close(() => resolve()));
        await new Promise<void>((resolve) => http.close(() => resolve()));
      })()),
  };
}

/** How an event frame starts as V8's inspector writes it (the method first). */
const EVENT_PREFIX = '{"method":"';

/** Whether the upstream inspector's port takes a connection now. */
function upstreamListening(wsUrl: string): Promise<boolean> {
  const { hostname, port } = new URL(wsUrl);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname, () => {
      socket.destroy();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
  });
}
