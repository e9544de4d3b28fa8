/**
 * How long a CDP step blocks the target's event loop, measured inside the
 * target: a 1 ms interval installed through Runtime.evaluate records the
 * largest gap between its ticks while the step runs. Cheap (one timer) and it
 * sees exactly what the target's own timers and I/O would have waited.
 *
 * Runtime.evaluate alone enables nothing, so the probe does not warm the
 * target by itself; the interval is cleared before returning.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { CdpSession, evaluateValue, resolveEndpoint } from '@heapcap/capture';

const KEY = '__heapcapBenchLoopProbe';

const INSTALL = `(() => {
  const p = (globalThis.${KEY} = { max: 0, last: performance.now(), timer: undefined });
  p.timer = setInterval(() => {
    const now = performance.now();
    if (now - p.last > p.max) p.max = now - p.last;
    p.last = now;
  }, 1);
  return true;
})()`;
const RESET = `(() => { const p = globalThis.${KEY}; p.max = 0; p.last = performance.now(); return true; })()`;
const READ = `(() => { const p = globalThis.${KEY}; clearInterval(p.timer); delete globalThis.${KEY}; return p.max; })()`;

/** Largest event-loop gap (ms, minus the 1 ms tick) in the target while `step(session)` ran on its own session. */
export async function measureLoopBlock(inspect: string, step: (session: CdpSession) => Promise<unknown>): Promise<number> {
  const endpoint = await resolveEndpoint({ kind: 'node', inspect }, { timeoutMs: 10_000 });
  const session = await CdpSession.connect(endpoint.wsUrl, { connectTimeoutMs: 10_000, commandTimeoutMs: 60_000 });
  try {
    await evaluateValue(session, INSTALL);
    // Let the interval settle, then forget the gaps caused by installing it.
    await sleep(50);
    await evaluateValue(session, RESET);
    await step(session);
    // One more tick after the step, so the gap it caused is closed and recorded.
    await sleep(50);
    const max = await evaluateValue<number>(session, READ);
    return Math.max(0, max - 1);
  } finally {
    await session.close();
  }
}
