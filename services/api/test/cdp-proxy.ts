/**
 * A WebSocket proxy in front of a target's inspector that counts
 * `HeapProfiler.takeHeapSnapshot` commands in flight (sent, not yet answered):
 * the target's view of how many snapshots were asked of it at once.
 */
import WebSocket from 'ws';

/** A running proxy; register targets with `ws: proxy.wsUrl`. */
export interface CdpProxy {
  wsUrl: string;
  /** takeHeapSnapshot commands forwarded to the target so far. */
  readonly snapshotsStarted: number;
  /** Most takeHeapSnapshot commands in flight at the same time. */
  readonly maxInFlight: number;
  /** takeHeapSnapshot commands in flight now. */
  readonly inFlight: number;
  close(): Promise<void>;
}

const TAKE = 'HeapProfiler.takeHeapSnapshot';

/** Starts a proxy on 127.0.0.1 that forwards every connection to `targetWsUrl`. */
export async function startCdpProxy(targetWsUrl: string): Promise<CdpProxy> {
  const server = new WebSocket.Server({ host: '127.0.0.1', port: 0 });
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  const stats = { snapshotsStarted: 0, maxInFlight: 0, inFlight: 0 };
  const sockets = new Set<WebSocket>();

  server.on('connection', (client) => {
    const upstream = new WebSocket(targetWsUrl, { perMessageDeflate: false });
    sockets.add(client).add(upstream);
    const pending = new Set<number>();
    const backlog: WebSocket.Data[] = [];
    const settle = (id: number): void => {
      if (pending.delete(id)) stats.inFlight--;
    };
    client.on('message', (data) => {
      const text = data.toString();
      if (text.includes(TAKE)) {
        const msg = JSON.parse(text) as { id: number; method: string };
        if (msg.method === TAKE) {
          pending.add(msg.id);
          stats.snapshotsStarted++;
          stats.inFlight++;
          stats.maxInFlight = Math.max(stats.maxInFlight, stats.inFlight);
        }
      }
      if (upstream.readyState === WebSocket.OPEN) upstream.send(data);
      else backlog.push(data);
    });
    upstream.on('open', () => {
      for (const d of backlog.splice(0)) upstream.send(d);
    });
    upstream.on('message', (data) => {
      // Responses start with {"id": …; snapshot chunks are events and are not parsed.
      if (pending.size > 0) {
        const text = data.toString();
        if (text.startsWith('{"id":')) settle((JSON.parse(text) as { id: number }).id);
      }
      if (client.readyState === WebSocket.OPEN) client.send(data);
    });
    const closeBoth = (): void => {
      // The client left: its snapshot requests are no longer anyone's (the target may still finish them).
      for (const id of [...pending]) settle(id);
      client.close();
      upstream.close();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('close', closeBoth);
    upstream.on('close', closeBoth);
    client.on('error', closeBoth);
    upstream.on('error', closeBoth);
  });

  const addr = server.address();
  const port = typeof addr === 'object' ? addr.port : 0;
  const path = new URL(targetWsUrl).pathname;
  let closed: Promise<void> | undefined;
  return {
    wsUrl: `ws://127.0.0.1:${port}${path}`,
    get snapshotsStarted() {
      return stats.snapshotsStarted;
    },
    get maxInFlight() {
      return stats.maxInFlight;
    },
    get inFlight() {
      return stats.inFlight;
    },
    close: () =>
      (closed ??= new Promise<void>((resolve) => {
        for (const s of sockets) s.terminate();
        server.close(() => resolve());
      })),
  };
}
