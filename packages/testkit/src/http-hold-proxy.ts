/**
 * An HTTP proxy in front of a server (MinIO) that can hold chosen requests:
 * a slow store, not a failing one. Requests pass through byte for byte with
 * their own Host header, so S3 signatures stay valid. A fault-matrix cell
 * holds the request that ends a capture's upload (or writes its summary) to
 * keep the capture in that phase until the fault is in place.
 */
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Which requests to hold: method and path with query, as the client sent them. */
export type HoldPredicate = (method: string, url: string) => boolean;

export interface HttpHoldProxy {
  /** http://127.0.0.1:PORT, to use in place of the upstream's endpoint. */
  endpoint: string;
  /** From now on, hold each request `when` matches until release(). */
  hold(when: HoldPredicate): void;
  /** Requests waiting on hold now. */
  held(): number;
  /** Stop holding and send everything held on, in order. */
  release(): void;
  close(): Promise<void>;
}

/** Start a proxy to `upstream` (http://HOST:PORT) on 127.0.0.1 (a free port). */
export async function startHttpHoldProxy(upstream: string): Promise<HttpHoldProxy> {
  const to = new URL(upstream);
  let when: HoldPredicate | undefined;
  const waiting: (() => void)[] = [];
  const forward = (req: IncomingMessage, res: ServerResponse): void => {
    const out = request({ host: to.hostname, port: to.port, method: req.method, path: req.url, headers: req.headers }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    });
    // The upstream gone (killed MinIO): the client sees its connection end, as it would without the proxy.
    out.on('error', () => res.destroy());
    req.on('error', () => out.destroy());
    req.pipe(out);
  };
  const server: Server = createServer((req, res) => {
    if (when?.(req.method ?? '', req.url ?? '') === true) {
      // A held request's body waits in its socket's buffers (TCP back-pressure), like a slow server's.
      req.pause();
      waiting.push(() => forward(req, res));
    } else {
      forward(req, res);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    hold: (predicate) => void (when = predicate),
    held: () => waiting.length,
    release: () => {
      when = undefined;
      for (const go of waiting.splice(0)) go();
    },
    close: async () => {
      when = undefined;
      waiting.length = 0;
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
