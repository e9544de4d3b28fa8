import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fixturePath } from './fixtures.ts';

/** The `<title>` of the leaky test page; it appears only after the page's script has run. */
export const PAGE_TITLE = 'heapcap test page';

// Read from the page itself so the count cannot drift from what it allocates.
const ORDERS_PER_MB = Number(/var ORDERS_PER_MB = (\d+);/.exec(readFileSync(fixturePath('page.html'), 'utf8'))?.[1]);

/** Exact number of `Order` objects the page at `/app/leaky?mb=N` keeps alive (4 `LineItem`s each). */
export function pageOrders(mb: number): number {
  if (!Number.isFinite(ORDERS_PER_MB)) throw new Error('page.html lost its ORDERS_PER_MB constant');
  return Math.round(mb * ORDERS_PER_MB);
}

/** A running page server. */
export interface PageServer {
  /** Absolute URL of `path` on this server, e.g. `url('/app/leaky?mb=20')`. */
  url(path: string): string;
  /** Stops the server and drops keep-alive connections (Chromium holds some). Idempotent. */
  close(): Promise<void>;
}

/** Serves the leaky test page at `/app/leaky?mb=N` on 127.0.0.1 (a free port). */
export async function startPageServer(): Promise<PageServer> {
  const page = readFileSync(fixturePath('page.html'));
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    if (req.method === 'GET' && path === '/app/leaky') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
      res.end(page);
    } else {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('not found\n');
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  let closed: Promise<void> | undefined;
  return {
    url: (path) => `http://127.0.0.1:${port}${path.startsWith('/') ? path : `/${path}`}`,
    close: () =>
      (closed ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      })),
  };
}
