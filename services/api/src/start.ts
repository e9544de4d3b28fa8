/** startApi: build the API and listen on the configured address (used by server.ts and `heapcap serve`). */
import type { HeapcapConfig } from '@heapcap/config';
import { buildApp, type ApiInstance } from './build.ts';
import type { ApiDeps } from './deps.ts';

/** A listening API. */
export interface RunningApi {
  app: ApiInstance;
  /** e.g. `http://127.0.0.1:8080`. */
  url: string;
  /** Stops accepting connections and waits for in-flight requests (at most `timeoutMs`, default 10 s). Idempotent. */
  close(timeoutMs?: number): Promise<void>;
}

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);

/** True for addresses only this machine can reach. */
export function isLoopback(host: string): boolean {
  return LOOPBACK.has(host) || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/** Builds the API and listens on `config.host:config.port`. Refuses to run without auth on a non-loopback address. */
export async function startApi(config: HeapcapConfig, deps: Omit<ApiDeps, 'config'>): Promise<RunningApi> {
  if (deps.auth.kind === 'dev' && !isLoopback(config.host)) {
    throw new Error(`--dev runs without authentication and only binds to loopback; HEAPCAP_HOST is ${config.host}. Set HEAPCAP_TOKENS_FILE to serve on other addresses.`);
  }
  const app = await buildApp({ ...deps, config });
  try {
    await app.listen({ host: config.host, port: config.port });
  } catch (err) {
    await app.close();
    throw err;
  }
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr !== null ? addr.port : config.port;
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  const url = `http://${host}:${port}`;
  app.log.info({ url, auth: deps.auth.kind }, `heapcap api listening on ${url}`);
  let closing: Promise<void> | undefined;
  return {
    app,
    url,
    close(timeoutMs = 10_000) {
      closing ??= (async () => {
        let timer: NodeJS.Timeout | undefined;
        const deadline = new Promise<void>((resolve) => {
          timer = setTimeout(() => {
            // Long ?wait= requests must not hold shutdown: cut the remaining connections.
            app.server.closeAllConnections();
            resolve();
          }, timeoutMs);
        });
        try {
          await Promise.race([app.close(), deadline]);
        } finally {
          clearTimeout(timer);
        }
      })();
      return closing;
    },
  };
}
