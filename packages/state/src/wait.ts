/** waitForCapture: block until a capture ends or a deadline passes (for `?wait=` and `heapcap trigger --wait`). */
import { setTimeout as sleep } from 'node:timers/promises';
import type { QueueContext } from './context.ts';
import { withRedisDeadline } from './connection.ts';
import { getCapture } from './records.ts';
import type { CaptureRecord } from './schemas.ts';

const TERMINAL = new Set(['succeeded', 'failed', 'cancelled', 'expired']);
/** Pub/sub drops messages across a reconnect: re-read the record this often regardless. */
const POLL_MS = 2_000;

/** True for succeeded, failed, cancelled and expired. */
export function isTerminal(record: CaptureRecord): boolean {
  return TERMINAL.has(record.status);
}

/**
 * Resolves with the record once it is terminal, or with the record as it is at
 * the deadline (`timeoutMs`), or when `signal` aborts (e.g. the HTTP client left).
 * Null if there is no such capture.
 */
export async function waitForCapture(
  ctx: QueueContext,
  id: string,
  timeoutMs: number,
  signal?: AbortSignal,
  /** How the record is read (HeapcapQueue.readCapture: also from what this process accepted). */
  read: (id: string) => Promise<CaptureRecord | null> = (i) => getCapture(ctx, i),
): Promise<CaptureRecord | null> {
  const deadline = Date.now() + timeoutMs;
  const stop = new AbortController();
  const onAbort = (): void => stop.abort();
  signal?.addEventListener('abort', onAbort, { once: true });
  // An already-aborted signal never fires 'abort': without this the wait would run to its deadline.
  if (signal?.aborted === true) stop.abort();
  // Subscribe before the first read, so an end between the read and the subscription is not missed.
  const off = ctx.events.onDone(id, () => stop.abort());
  try {
    await withRedisDeadline(ctx.events.ready(), Math.max(1, Math.min(timeoutMs, ctx.settings.redisTimeoutMs)), 'SUBSCRIBE').catch(() => undefined);
    for (;;) {
      const record = await read(id);
      if (record === null || isTerminal(record)) return record;
      const left = deadline - Date.now();
      if (left <= 0 || stop.signal.aborted) return record;
      await sleep(Math.min(left, POLL_MS), undefined, { signal: stop.signal }).catch(() => undefined);
    }
  } finally {
    off();
    signal?.removeEventListener('abort', onAbort);
  }
}
