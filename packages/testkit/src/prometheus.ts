/**
 * A real Prometheus for tests: scrapes the given /metrics URLs every second
 * into a fresh TSDB directory, on a free loopback port. The binary comes with
 * Debian's `prometheus` package (scripts/test-deps.sh).
 */
import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { OutputLog } from './output-log.ts';
import { freePort, tmpDir, waitFor } from './proc.ts';
import { onProcessExit } from './reaper.ts';

/** One scrape target: `http://host:port/metrics` (a bearer token when /metrics needs one). */
export interface PrometheusScrape {
  url: string;
  bearerToken?: string;
}

/** A running Prometheus owned by a test. */
export interface PrometheusServer {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  /** Its output so far (for failure messages). */
  logs(): string;
  /** An instant or range query through its HTTP API: the `data.result` of a success. */
  query<T = unknown>(path: '/api/v1/query' | '/api/v1/query_range', params: Record<string, string>): Promise<T>;
  /** SIGTERM (SIGKILL after 5 s), then removes the TSDB directory. Idempotent. */
  stop(): Promise<void>;
}

/** Path of the Prometheus binary: `$HEAPCAP_PROMETHEUS_BIN` or `prometheus` on PATH. */
export function prometheusBinary(): string {
  return process.env.HEAPCAP_PROMETHEUS_BIN ?? 'prometheus';
}

/** Starts Prometheus scraping `scrapes` at a 1 s interval; resolves once it reports ready. */
export async function startPrometheus(scrapes: PrometheusScrape[], options: { startTimeoutMs?: number } = {}): Promise<PrometheusServer> {
  const dir = await tmpDir('heapcap-prometheus');
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  // JSON is YAML: one job per scrape so that each gets its own scheme, path and token.
  const config = {
    global: { scrape_interval: '1s', evaluation_interval: '1s' },
    scrape_configs: scrapes.map((s, i) => {
      const u = new URL(s.url);
      return {
        job_name: `heapcap-${i}`,
        scrape_interval: '1s',
        scrape_timeout: '1s',
        scheme: u.protocol.replace(':', ''),
        metrics_path: u.pathname,
        ...(s.bearerToken === undefined ? {} : { authorization: { type: 'Bearer', credentials: s.bearerToken } }),
        static_configs: [{ targets: [u.host] }],
      };
    }),
  };
  const configPath = join(dir.path, 'prometheus.yml');
  await writeFile(configPath, JSON.stringify(config));
  const proc = spawn(
    prometheusBinary(),
    [`--config.file=${configPath}`, `--storage.tsdb.path=${join(dir.path, 'data')}`, `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const out = new OutputLog(proc.stdout);
  const err = new OutputLog(proc.stderr);
  const logs = (): string => `${out.text()}${err.text()}`;
  let exited = false;
  const exit = new Promise<void>((resolve) => proc.once('exit', () => ((exited = true), resolve())));
  proc.once('error', () => {});
  const unregister = onProcessExit(() => proc.kill('SIGKILL'));
  let stopped: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopped ??= (async () => {
      if (!exited) {
        proc.kill('SIGTERM');
        const timer = setTimeout(() => proc.kill('SIGKILL'), 5000);
        await exit;
        clearTimeout(timer);
      }
      unregister();
      await dir.cleanup();
    })());
  try {
    await waitFor(
      async () => {
        if (exited) throw new Error(`prometheus exited during start-up: ${logs().slice(-2000)}`);
        return (await fetch(`${url}/-/ready`, { signal: AbortSignal.timeout(1000) })).ok;
      },
      { timeoutMs: options.startTimeoutMs ?? 30_000, intervalMs: 100, what: `Prometheus ready at ${url}` },
    );
  } catch (e) {
    await stop();
    throw e;
  }
  return {
    url,
    logs,
    async query<T>(path: string, params: Record<string, string>): Promise<T> {
      const res = await fetch(`${url}${path}?${new URLSearchParams(params)}`, { signal: AbortSignal.timeout(10_000) });
      const body = (await res.json()) as { status: string; error?: string; data?: { result: T } };
      if (body.status !== 'success' || body.data === undefined) throw new Error(`prometheus ${path}: ${res.status} ${body.error ?? ''}`);
      return body.data.result;
    },
    stop,
  };
}
