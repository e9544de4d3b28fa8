/**
 * Runtime facts gathered in preflight: product, versions, heap usage.
 * Read-only and cheap: no domain is enabled, nothing is left in the target.
 */
import type { CdpSession } from './session.ts';
import type { ResolvedEndpoint } from './endpoint.ts';
import { CaptureError } from './errors.ts';

/** What we know about the target before the snapshot. */
export interface RuntimeFacts {
  product: 'node' | 'chromium';
  /** `v20.20.2` for Node, `HeadlessChrome/156.0.8078.73` for Chromium. */
  version: string;
  v8Version: string | undefined;
  /** Node only. */
  pid?: number;
  platform?: string;
  arch?: string;
  /** Chromium only: the page or worker URL. */
  url?: string;
  heap: { usedBytes: number; totalBytes: number };
}

/**
 * Evaluated in the target. An expression (no statements at top level), so it
 * defines no globals; `process` is a global in CommonJS and ESM alike.
 */
const NODE_FACTS_EXPR = `(() => ({
  version: process.version,
  v8: process.versions.v8,
  pid: process.pid,
  platform: process.platform,
  arch: process.arch,
}))()`;

const BROWSER_FACTS_EXPR = `(() => ({ userAgent: navigator.userAgent, url: String(globalThis.location && location.href) }))()`;

/** Evaluate an expression and return its JSON value. */
export async function evaluateValue<T>(session: CdpSession, expression: string): Promise<T> {
  const res = await session.send('Runtime.evaluate', {
    expression,
    returnByValue: true,
    silent: true,
    // Never leave anything in the console's history or the target's object groups.
    objectGroup: 'heapcap-preflight',
  });
  if (res.exceptionDetails !== undefined) {
    const text = res.exceptionDetails.exception?.description ?? res.exceptionDetails.text;
    throw new CaptureError('protocol_error', `evaluating preflight facts in the target failed: ${text}`);
  }
  return res.result.value as T;
}

/** Gather runtime facts over an open session. */
export async function gatherRuntimeFacts(session: CdpSession, endpoint: ResolvedEndpoint): Promise<RuntimeFacts> {
  const heapPromise = session.send('Runtime.getHeapUsage');
  // Sent beside the evaluation below; if that one fails first (the target
  // closed), this one fails too and must not become an unhandled rejection.
  heapPromise.catch(() => undefined);
  let facts: RuntimeFacts;
  if (endpoint.product === 'node') {
    const v = await evaluateValue<{ version: string; v8: string; pid: number; platform: string; arch: string }>(session, NODE_FACTS_EXPR);
    facts = { product: 'node', version: v.version, v8Version: v.v8, pid: v.pid, platform: v.platform, arch: v.arch, heap: { usedBytes: 0, totalBytes: 0 } };
  } else {
    const v = await evaluateValue<{ userAgent: string; url: string }>(session, BROWSER_FACTS_EXPR);
    facts = {
      product: 'chromium',
      version: endpoint.browser?.product ?? /(?:Headless)?Chrom(?:e|ium)\/[\d.]+/.exec(v.userAgent)?.[0] ?? v.userAgent,
      v8Version: endpoint.browser?.v8Version,
      url: v.url,
      heap: { usedBytes: 0, totalBytes: 0 },
    };
  }
  const heap = await heapPromise;
  facts.heap = { usedBytes: heap.usedSize, totalBytes: heap.totalSize };
  return facts;
}

/** node-pid: refuse an inspector that belongs to another process than the one we opened it for. */
export function assertExpectedPid(endpoint: ResolvedEndpoint, facts: RuntimeFacts): void {
  if (endpoint.expectPid === undefined || facts.pid === endpoint.expectPid) return;
  throw new CaptureError('target_not_found', `the inspector on the port opened for pid ${endpoint.expectPid} belongs to pid ${facts.pid ?? '?'}`, {
    hint: 'another Node.js process already listens on that inspector port; pass the port of the intended process',
  });
}
