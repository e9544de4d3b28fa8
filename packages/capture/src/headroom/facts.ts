/**
 * Memory facts for the headroom gate, gathered over the preflight session.
 * One `Runtime.evaluate` of an expression (no globals, no listeners, nothing
 * enabled), so it is cheap and leaves the target as it was.
 */
import { freemem, totalmem } from 'node:os';
import type { CdpSession } from '../session.ts';
import type { ResolvedEndpoint } from '../endpoint.ts';
import { CaptureError } from '../errors.ts';
import { BROWSER_MEMORY_PROBE, nodeMemoryProbe, NODE_MAX_RSS_PROBE, type BrowserProbeResult, type NodeProbeResult } from './probe.ts';

/** The cgroup the target runs in, at the level with the tightest limit. */
export type CgroupFacts = NonNullable<NodeProbeResult['cgroup']>;

/** What preflight learnt about the target's memory (bytes; null when unknown). */
export interface MemoryFacts {
  /** How the facts were read: Node builtins (two ways), or a browser's JS view. */
  access: NodeProbeResult['access'] | 'browser';
  /** Target process RSS (Node). */
  rssBytes: number | null;
  /** Target process peak RSS so far (Node, getrusage). */
  maxRssBytes: number | null;
  /** V8's heap size limit (Node `v8.getHeapStatistics()`, Chromium `performance.memory`). */
  heapLimitBytes: number | null;
  /** Node ≥ 19.6: libuv's view of the cgroup limit. */
  constrainedMemoryBytes: number | null;
  /** Node ≥ 22 / 20.13: libuv's view of the memory left under that limit. */
  availableMemoryBytes: number | null;
  cgroup: CgroupFacts | null;
  /** Host memory: from inside the target (Node), or from the capturing host for a browser on loopback. */
  host: { totalBytes: number; availableBytes: number; source: 'target' | 'capturing host' } | null;
  /** Chromium only: what `performance.memory` and `navigator.deviceMemory` say. */
  browser?: BrowserProbeResult;
  warnings: string[];
}

/** Evaluate in the target and return the JSON value; failures become protocol errors. */
async function evaluate<T>(session: CdpSession, expression: string, includeCommandLineAPI: boolean): Promise<T> {
  const res = await session.send('Runtime.evaluate', {
    expression,
    returnByValue: true,
    silent: true,
    includeCommandLineAPI,
    objectGroup: 'heapcap-preflight',
  });
  if (res.exceptionDetails !== undefined) {
    const text = res.exceptionDetails.exception?.description ?? res.exceptionDetails.text;
    throw new CaptureError('protocol_error', `evaluating memory facts in the target failed: ${text}`);
  }
  return res.result.value as T;
}

/** Gather memory facts; `procDir` is for tests of other cgroup layouts only. */
export async function gatherMemoryFacts(session: CdpSession, endpoint: ResolvedEndpoint, procDir?: string): Promise<MemoryFacts> {
  if (endpoint.product === 'node') {
    // The command-line API is how Node < 20.16 targets with an ESM entry get `require`.
    const p = await evaluate<NodeProbeResult>(session, nodeMemoryProbe(procDir), true);
    return {
      access: p.access,
      rssBytes: p.rssBytes,
      maxRssBytes: p.maxRssBytes,
      heapLimitBytes: p.heapLimitBytes,
      constrainedMemoryBytes: p.constrainedMemoryBytes,
      availableMemoryBytes: p.availableMemoryBytes,
      cgroup: p.cgroup,
      host: p.host === null ? null : { ...p.host, source: 'target' },
      warnings: p.warnings,
    };
  }
  const b = await evaluate<BrowserProbeResult>(session, BROWSER_MEMORY_PROBE, false);
  const local = isLoopback(endpoint.wsUrl);
  return {
    access: 'browser',
    rssBytes: null,
    maxRssBytes: null,
    heapLimitBytes: b.jsHeapSizeLimitBytes,
    constrainedMemoryBytes: null,
    availableMemoryBytes: null,
    cgroup: null,
    // A browser on loopback shares our host; a remote one's host is unknown to us.
    host: local ? { totalBytes: totalmem(), availableBytes: freemem(), source: 'capturing host' } : null,
    browser: b,
    warnings: [
      'a page cannot see its renderer process RSS or cgroup: usage is approximated by the JS heap',
      ...(local ? [] : ['the browser is not on this host: host memory unknown; configure a memory limit for this target']),
    ],
  };
}

/** The target's peak RSS so far (Node only); null where the runtime does not expose it. */
export async function readMaxRss(session: CdpSession, endpoint: ResolvedEndpoint, timeoutMs: number): Promise<number | null> {
  if (endpoint.product !== 'node') return null;
  const res = await session.send('Runtime.evaluate', { expression: NODE_MAX_RSS_PROBE, returnByValue: true, silent: true }, timeoutMs);
  const v: unknown = res.result.value;
  return typeof v === 'number' ? v : null;
}

function isLoopback(wsUrl: string): boolean {
  try {
    const host = new URL(wsUrl).hostname;
    return host === 'localhost' || host === '[::1]' || host === '::1' || /^127\./.test(host);
  } catch {
    return false;
  }
}
