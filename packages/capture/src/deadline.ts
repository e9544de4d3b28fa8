/** Deadlines and abort helpers shared by the engine. */
import { CaptureError } from './errors.ts';

/**
 * Reject with `onTimeout()` if `promise` has not settled within `ms`; rejects with `cancelled` on abort.
 * The deadline counts the other side's silence, not this process's own stalls: after a stall Node runs
 * due timers before it reads its sockets, so an answer already waiting would lose to the timer. The
 * timer rejects from setImmediate, after that loop turn has read them (packages/capture/test/deadline.test.ts).
 */
export async function withDeadline<T>(
  promise: Promise<T>,
  ms: number,
  onTimeout: () => CaptureError,
  signal?: AbortSignal,
): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  const guards = new Promise<never>((_, reject) => {
    timer = setTimeout(() => setImmediate(() => reject(onTimeout())), ms);
    if (signal !== undefined) {
      onAbort = () => reject(cancelledError(signal));
      if (signal.aborted) onAbort();
      else signal.addEventListener('abort', onAbort, { once: true });
    }
  });
  try {
    return await Promise.race([promise, guards]);
  } finally {
    clearTimeout(timer);
    if (onAbort !== undefined) signal?.removeEventListener('abort', onAbort);
  }
}

/** The error a cancelled capture fails with. */
export function cancelledError(signal?: AbortSignal): CaptureError {
  const reason: unknown = signal?.reason;
  const why = reason instanceof Error ? reason.message : typeof reason === 'string' ? reason : 'cancelled by the caller';
  return new CaptureError('cancelled', `the capture was cancelled (${why})`, { cause: reason });
}

/** Throw `cancelled` if the signal has fired. */
export function throwIfAborted(signal?: AbortSignal): void {
  if (signal?.aborted === true) throw cancelledError(signal);
}

/** Resolve after `ms`, or reject with `cancelled` on abort. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted === true) {
      reject(cancelledError(signal));
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(cancelledError(signal));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
