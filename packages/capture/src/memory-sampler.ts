/**
 * Samples one target's memory over CDP (the watcher's sampler, services/worker/src/watch): `Runtime.getHeapUsage` (heap used and
 * total), the heap limit (read once per session: it does not change), and for
 * Node.js the resident set. Nothing is enabled in the target and nothing is
 * left behind: the evaluations are expressions (no globals), return by value,
 * and use no regular expressions; Node.js's modules come from
 * `process.getBuiltinModule` (20.16+/22.3+) or the inspector's command-line
 * `require` for older targets, as in the headroom probe.
 *
 * Two ways to hold the connection: one long-lived session per target
 * (`persistent`, the default: docs/watch.md has the measurement that chose
 * it), or a new session per sample (`per-sample`). A persistent session that
 * closes (the target restarted, a capture released an inspector it opened) is
 * reopened at the next sample.
 */
import { releaseInspector } from './capture.ts';
import { resolveEndpoint, type EndpointSpec, type ResolvedEndpoint } from './endpoint.ts';
import { CdpSession } from './session.ts';

/** One memory sample (bytes; null where the runtime does not tell). */
export interface MemorySample {
  /** When it was taken (ms since the epoch). */
  t: number;
  heapUsedBytes: number;
  heapTotalBytes: number;
  heapLimitBytes: number | null;
  /** Node.js only. */
  rssBytes: number | null;
}

export type SessionMode = 'persistent' | 'per-sample';

/** Deadlines of one sample. */
export interface SamplerTimeouts {
  connectMs: number;
  commandMs: number;
}

const NODE_LIMIT_EXPR = `(() => {
  try {
    const load = typeof process.getBuiltinModule === 'function' ? (n) => process.getBuiltinModule(n) : (typeof require === 'function' ? require : null);
    return load === null ? null : load('v8').getHeapStatistics().heap_size_limit;
  } catch (e) { return null; }
})()`;

const NODE_RSS_EXPR = `(() => { try { return process.memoryUsage.rss ? process.memoryUsage.rss() : process.memoryUsage().rss; } catch (e) { return null; } })()`;

const BROWSER_LIMIT_EXPR = `(() => { const m = globalThis.performance && performance.memory; return m && typeof m.jsHeapSizeLimit === 'number' ? m.jsHeapSizeLimit : null; })()`;

/** A sampler of one target. `close()` is idempotent; a closed sampler can sample again (it reconnects). */
export class MemorySampler {
  readonly #spec: EndpointSpec;
  readonly #mode: SessionMode;
  readonly #timeouts: SamplerTimeouts;
  #session: CdpSession | undefined;
  #endpoint: ResolvedEndpoint | undefined;
  #limit: number | null = null;

  constructor(spec: EndpointSpec, mode: SessionMode, timeouts: SamplerTimeouts) {
    this.#spec = spec;
    this.#mode = mode;
    this.#timeouts = timeouts;
  }

  /** Connections opened so far (for the bench). */
  connects = 0;

  async #open(): Promise<CdpSession> {
    if (this.#session !== undefined && this.#session.state === 'open') return this.#session;
    this.#session = undefined;
    const endpoint = await resolveEndpoint(this.#spec, { timeoutMs: this.#timeouts.connectMs });
    this.#endpoint = endpoint;
    const session = await CdpSession.connect(endpoint.wsUrl, { connectTimeoutMs: this.#timeouts.connectMs, commandTimeoutMs: this.#timeouts.commandMs });
    this.connects++;
    this.#session = session;
    this.#limit = await this.#evaluate<number | null>(session, endpoint.product === 'node' ? NODE_LIMIT_EXPR : BROWSER_LIMIT_EXPR, endpoint.product === 'node');
    return session;
  }

  async #evaluate<T>(session: CdpSession, expression: string, commandLineApi = false): Promise<T | null> {
    const res = await session.send('Runtime.evaluate', { expression, returnByValue: true, silent: true, includeCommandLineAPI: commandLineApi, objectGroup: 'heapcap-watch' });
    if (res.exceptionDetails !== undefined) return null;
    const v = res.result.value as unknown;
    return typeof v === 'number' ? (v as T) : null;
  }

  /** One sample; throws a CaptureError (target_unreachable, target_closed, timeout…) when the target cannot be read. */
  async sample(now: () => number = Date.now): Promise<MemorySample> {
    try {
      const session = await this.#open();
      const heap = session.send('Runtime.getHeapUsage');
      heap.catch(() => undefined);
      const rss = this.#endpoint?.product === 'node' ? await this.#evaluate<number>(session, NODE_RSS_EXPR) : null;
      const { usedSize, totalSize } = await heap;
      return { t: now(), heapUsedBytes: usedSize, heapTotalBytes: totalSize, heapLimitBytes: this.#limit, rssBytes: rss };
    } catch (err) {
      await this.close();
      throw err;
    } finally {
      if (this.#mode === 'per-sample') await this.close();
    }
  }

  /** Close the session (and an inspector the sampler opened with SIGUSR1). */
  async close(): Promise<void> {
    const session = this.#session;
    const endpoint = this.#endpoint;
    this.#session = undefined;
    this.#endpoint = undefined;
    if (session !== undefined) await session.close().catch(() => undefined);
    if (endpoint?.openedInspector !== undefined) await releaseInspector(endpoint).catch(() => undefined);
  }
}
