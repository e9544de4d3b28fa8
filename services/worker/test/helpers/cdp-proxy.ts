/**
 * A WebSocket proxy in front of a target's inspector that watches
 * `HeapProfiler.takeHeapSnapshot` from the target's side of the wire: a call is
 * in flight from the moment its request passes until its response (or its
 * connection closes). Tests register the target with the proxy's ws:// URL
 * and assert `maxInFlight === 1`: no two snapshots ever reached the target at once.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import WebSocket from 'ws';

/** What the proxy saw. */
export interface CdpProxy {
  /** ws:// URL to register as the target. */
  url: string;
  /** takeHeapSnapshot requests forwarded so far. */
  snapshotCalls(): number;
  /** Completed takeHeapSnapshot calls (a response came back). */
  snapshotsCompleted(): number;
  /** The largest number of takeHeapSnapshot calls in flight at once. */
  maxInFlight(): number;
  /** Calls in flight now. */
  inFlight(): number;
  close(): Promise<void>;
}

interface Frame {
  id?: number;
  method?: string;
}

/** Start a proxy to `upstreamWsUrl` on 127.0.0.1 (a free port). */
export async function startCdpProxy(upstreamWsUrl: string): Promise<CdpProxy> {
  const http: Server = createServer((_req, res) => res.writeHead(404).end());
  const wss = new WebSocket.Server({ server: http });
  let calls = 0;
  let completed = 0;
  let inFlight = 0;
  let max = 0;
  const sockets = new Set<WebSocket>();
  wss.on('connection', (client) => {
    const upstream = new WebSocket(upstreamWsUrl, { perMessageDeflate: false });
    sockets.add(client);
    sockets.add(upstream);
    const pending = new Set<number>();
    const queued: WebSocket.Data[] = [];
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
      if (frame.method === 'HeapProfiler.takeHeapSnapshot' && frame.id !== undefined) {
        pending.add(frame.id);
        calls++;
        inFlight++;
        max = Math.max(max, inFlight);
      }
      if (upstream.readyState === WebSocket.OPEN) upstream.send(text);
      else queued.push(text);
    });
    upstream.on('open', () => {
      for (const q of queued.splice(0)) upstream.send(q);
    });
    upstream.on('message', (data) => {
      const text = data.toString();
      // Cheap check first: chunk events are large and never carry a top-level id.
      if (!text.startsWith('{"method"')) {
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
  return {
    url: `ws://127.0.0.1:${port}/proxy`,
    snapshotCalls: () => calls,
    snapshotsCompleted: () => completed,
    maxInFlight: () => max,
    inFlight: () => inFlight,
    close: async () => {
      for (const s of sockets) s.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
