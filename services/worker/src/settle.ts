/**
 * Wait until a target's main thread answers again. A snapshot cannot be
 * interrupted inside V8: after we abandon one (cancel, error mid-snapshot) the
 * target keeps generating it. Holding the target lock until then keeps the
 * promise "one snapshot in flight per target", and the next capture does not
 * queue behind a ghost.
 *
 * Node's inspector serves /json/list and the WebSocket from its own thread, so
 * a busy target still accepts the connection and only the evaluate waits; an
 * unreachable endpoint means the process is gone, and there is nothing to wait for.
 */
import { CdpSession, DEFAULT_TIMEOUTS, evaluateValue, resolveEndpoint, type EndpointSpec } from '@heapcap/capture';
import { isCaptureError } from '@heapcap/errors';

/** 'idle' once `Runtime.evaluate("1")` answers; 'gone' if the target cannot be reached; 'busy' if `timeoutMs` passed. */
export async function settleTarget(endpoint: EndpointSpec, timeoutMs: number): Promise<'idle' | 'gone' | 'busy'> {
  let session: CdpSession | undefined;
  try {
    const connectMs = Math.min(timeoutMs, DEFAULT_TIMEOUTS.connectMs);
    const resolved = await resolveEndpoint(endpoint, { timeoutMs: connectMs });
    session = await CdpSession.connect(resolved.wsUrl, { connectTimeoutMs: connectMs, commandTimeoutMs: timeoutMs });
    await evaluateValue<number>(session, '1');
    return 'idle';
  } catch (err) {
    if (isCaptureError(err, 'protocol_timeout')) return 'busy';
    return 'gone';
  } finally {
    await session?.close();
  }
}
