/**
 * Watches a Node target from a second inspector session, to tell whether a
 * heap snapshot happened while a capture ran: a snapshot stops the target's
 * main thread for its whole generation and serialization (seconds for a heap
 * of tens of MB), which no other step of a capture does.
 *
 * A 1 ms interval installed through Runtime.evaluate records the longest gap
 * between its ticks. Runtime.evaluate enables nothing (no HeapProfiler, no
 * Debugger), so watching does not change what the capture sees. Node accepts
 * several inspector sessions at once, and each call here opens its own.
 */
import { CdpSession, evaluateValue, resolveEndpoint } from '@heapcap/capture';

const KEY = '__heapcapTestWatch';

const INSTALL = `(() => {
  const w = globalThis.${KEY} ??= { max: 0, last: performance.now(), timer: undefined };
  clearInterval(w.timer);
  w.max = 0;
  w.last = performance.now();
  w.timer = setInterval(() => {
    const now = performance.now();
    if (now - w.last > w.max) w.max = now - w.last;
    w.last = now;
  }, 1);
  return true;
})()`;

// Close the current gap first, so a stall that is still going on counts.
const READ = `(() => {
  const w = globalThis.${KEY};
  const now = performance.now();
  return Math.max(w.max, now - w.last);
})()`;

async function withSession<T>(inspect: string, fn: (session: CdpSession) => Promise<T>): Promise<T> {
  const endpoint = await resolveEndpoint({ kind: 'node', inspect }, { timeoutMs: 10_000 });
  const session = await CdpSession.connect(endpoint.wsUrl, { connectTimeoutMs: 10_000, commandTimeoutMs: 30_000 });
  try {
    return await fn(session);
  } finally {
    await session.close();
  }
}

/** Starts (or restarts) stall tracking in the target at `inspect` (host:port). */
export async function watchStalls(inspect: string): Promise<void> {
  await withSession(inspect, (s) => evaluateValue(s, INSTALL));
}

/** The longest main-thread stall (ms) in the target since {@link watchStalls}. */
export async function longestStallMs(inspect: string): Promise<number> {
  return withSession(inspect, (s) => evaluateValue<number>(s, READ));
}
