/**
 * Wait until a target's main thread answers again. A snapshot (or a GC, or a
 * Debugger.enable) cannot be interrupted inside V8: after we abandon one
 * (timeout, cancel, error mid-snapshot) the target keeps at it. Holding the
 * target lock until then keeps the promise "one snapshot in flight per
 * target", and the next capture does not pile onto a frozen process.
 *
 * Node's inspector serves /json/list and the WebSocket from its own thread, so
 * a target busy in V8 still accepts the connection and only the evaluate
 * waits. A process that is frozen altogether (SIGSTOP, swapping) answers
 * nothing, not even the HTTP request: that is busy too, not gone. Only a
 * refused connection (nobody listens any more) means the process is gone,
 * or, with a proxy in front of the inspector (a Kubernetes port-forward, an
 * ingress), the proxy answering the upgrade with 502 or 503: its upstream
 * refused it or has no endpoint. A frozen process still accepts TCP (the
 * kernel does), so a proxy before it times out instead (504, or no answer):
 * that stays busy.
 */
import { CdpSession, evaluateValue, releaseInspector, resolveEndpoint, type EndpointSpec, type ResolvedEndpoint } from '@heapcap/capture';
import { isCaptureError } from '@heapcap/errors';

/** How a wait for the target ended, and how long it took. */
export interface SettleResult {
  outcome: 'idle' | 'gone' | 'busy';
  waitedMs: number;
}

/** One try per this long at most, so a frozen HTTP request does not eat the whole bound. */
const TRY_MS = 5_000;
const RETRY_PAUSE_MS = 250;

/** 'idle' once `Runtime.evaluate("1")` answers; 'gone' if nothing listens; 'busy' if `timeoutMs` passed first. */
export async function settleTarget(endpoint: EndpointSpec, timeoutMs: number): Promise<SettleResult> {
  const start = performance.now();
  const left = (): number => timeoutMs - (performance.now() - start);
  const result = (outcome: SettleResult['outcome']): SettleResult => ({ outcome, waitedMs: Math.round(performance.now() - start) });
  while (left() > 0) {
    let session: CdpSession | undefined;
    let resolved: ResolvedEndpoint | undefined;
    try {
      const connectMs = Math.max(1, Math.min(left(), TRY_MS));
      resolved = await resolveEndpoint(endpoint, { timeoutMs: connectMs });
      session = await CdpSession.connect(resolved.wsUrl, { connectTimeoutMs: connectMs, commandTimeoutMs: Math.max(1, left()) });
      await evaluateValue<number>(session, '1');
      // A node-pid target whose inspector this wait opened (SIGUSR1) gets it closed again.
      await releaseInspector(resolved, session);
      return result('idle');
    } catch (err) {
      // Refused, or the target reports it is not there: the process is gone.
      if (isCaptureError(err, 'target_not_found') || isCaptureError(err, 'target_closed') || refused(err) || proxySaysGone(err)) return result('gone');
      // A timeout of any kind: still busy (or frozen); try again while the bound allows.
    } finally {
      await session?.close().catch(() => undefined);
    }
    // Opened by this try but not answered: close it before trying again (or giving up).
    if (resolved?.openedInspector !== undefined) await releaseInspector(resolved);
    await new Promise((resolve) => setTimeout(resolve, Math.min(RETRY_PAUSE_MS, Math.max(0, left()))));
  }
  return result('busy');
}

/** True when the connection was refused: nothing listens on the inspector port any more. */
function refused(err: unknown): boolean {
  for (let e: unknown = err; e instanceof Error; e = e.cause) {
    if ((e as NodeJS.ErrnoException).code === 'ECONNREFUSED' || /ECONNREFUSED/.test(e.message)) return true;
  }
  return false;
}

/** HTTP statuses a proxy answers the upgrade with when nothing is behind it: bad gateway (refused), unavailable (no endpoint). */
const GONE_BEHIND_PROXY = new Set([502, 503]);

/** True when a proxy in front of the inspector answered the WebSocket upgrade with {@link GONE_BEHIND_PROXY}. */
function proxySaysGone(err: unknown): boolean {
  if (!isCaptureError(err, 'target_unreachable')) return false;
  const status = err.details?.['httpStatus'];
  return typeof status === 'number' && GONE_BEHIND_PROXY.has(status);
}
