/**
 * Closing an inspector heapcap opened with SIGUSR1 (`node-pid` targets), so a
 * capture does not leave a debugger port any local user can attach to.
 *
 * How, measured on Node 18.20, 20.20, 22.23 and 24.21: `inspector.close()`
 * (the same native function as `process._debugEnd()`) evaluated through an
 * inspector session disconnects every session, stops the listener (the port
 * refuses connections 3-8 ms later) and returns at once; the target's event
 * loop never stalls (50 ms ticks kept coming), a later SIGUSR1 opens the
 * inspector again, and the target prints nothing. Our own request never gets
 * an answer: the session carrying it is the first one dropped. A target that
 * is busy (still in a snapshot) runs the request when its main thread is free
 * (measured: the port closed as soon as a 2 s busy loop ended), and one that
 * is frozen (SIGSTOP) cannot be reached at all within the budget.
 */
import { connect } from 'node:net';
import { performance } from 'node:perf_hooks';
import { isCaptureError } from './errors.ts';
import { CdpSession } from './session.ts';
import { sleep } from './deadline.ts';

/** An inspector heapcap opened: where, and for which process. */
export interface OpenedInspector {
  host: string;
  port: number;
  pid: number;
}

/** What happened to the target's inspector after the capture (recorded in the manifest). */
export interface InspectorRelease {
  /** True when the inspector was not listening before heapcap sent SIGUSR1. */
  openedByHeapcap: boolean;
  /** True when heapcap closed it again and its port then refused connections. */
  closed: boolean;
  /** `host:port` of an inspector heapcap opened. */
  address?: string;
  /** Why it is still open, when it is. */
  note?: string;
}

/** Nothing to do: the inspector was there before us (or the target is not a local pid). */
export const NOT_OPENED_BY_US: InspectorRelease = { openedByHeapcap: false, closed: false };

/**
 * Budget for closing, connect to verification. A responsive local target
 * needs a few ms; a frozen one would never answer, so do not wait long.
 */
export const INSPECTOR_CLOSE_MS = 2_000;

// Prefer the public API where this Node has process.getBuiltinModule (20.16+, 22.3+); the
// pid check keeps us from closing another process's inspector that took the port meanwhile.
const closeExpression = (pid: number): string =>
  `(() => { if (process.pid !== ${pid}) return 'other-process'; ` +
  `const close = (typeof process.getBuiltinModule === 'function' && process.getBuiltinModule('node:inspector').close) || process._debugEnd; ` +
  `close(); return 'still-connected'; })()`;

/**
 * Close the inspector heapcap opened for `opened.pid` and verify its port is
 * closed. Uses the capture's session while it is open and answering, else a
 * session of its own to `wsUrl` (after a cancel, or when the peer dropped us).
 * Never throws.
 */
export async function closeOpenedInspector(opened: OpenedInspector, via: { session?: CdpSession | undefined; wsUrl: string }, budgetMs = INSPECTOR_CLOSE_MS): Promise<InspectorRelease> {
  const address = `${opened.host}:${opened.port}`;
  const deadline = performance.now() + budgetMs;
  const left = (): number => Math.max(1, Math.round(deadline - performance.now()));
  const reuse = via.session !== undefined && via.session.state === 'open' && via.session.responsive ? via.session : undefined;
  let note: string | undefined;
  try {
    const session = reuse ?? (await CdpSession.connect(via.wsUrl, { connectTimeoutMs: left(), commandTimeoutMs: left() }));
    try {
      const res = await session.send('Runtime.evaluate', { expression: closeExpression(opened.pid), returnByValue: true, silent: true }, left());
      const value: unknown = res.result.value;
      note =
        value === 'other-process'
          ? `the inspector on ${address} now belongs to another process; heapcap left it alone`
          : `the target evaluated the close request but kept the inspector open (${res.exceptionDetails?.exception?.description ?? String(value)})`;
    } catch (err) {
      // target_closed is the expected outcome: closing the inspector dropped this session.
      if (!isCaptureError(err, 'target_closed')) {
        note = isCaptureError(err, 'protocol_timeout')
          ? 'the target is busy or frozen: the close request is queued and runs when its main thread is free'
          : `the close request failed: ${(err as Error).message}`;
      }
    } finally {
      // The capture's own session is closed by the capture (it is gone already when the close worked).
      if (reuse === undefined) await session.close();
    }
  } catch (err) {
    note = `could not reach the inspector to close it: ${(err as Error).message}`;
  }
  const closed = await waitPortClosed(opened.host, opened.port, deadline);
  return { openedByHeapcap: true, closed, address, note: closed ? undefined : note };
}

/** A sentence for an error message when an inspector heapcap opened is still listening. */
export function leftOpenText(release: InspectorRelease): string {
  return `the inspector heapcap opened on ${release.address ?? '?'} is still listening${release.note === undefined ? '' : ` (${release.note})`}`;
}

/**
 * Whether something accepts TCP connections on host:port. A connection that
 * neither opens nor is refused in time counts as listening: the cautious answer
 * both ways (we never close an inspector we did not open, never claim a close
 * we did not see). On loopback the kernel accepts or refuses at once, even for
 * a frozen process.
 */
export function portListening(host: string, port: number, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: host.replace(/^\[|\]$/g, ''), port });
    const done = (listening: boolean): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(listening);
    };
    const timer = setTimeout(() => done(true), timeoutMs);
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/** Polls until the port refuses connections or the deadline (performance.now()) passes. */
async function waitPortClosed(host: string, port: number, deadline: number): Promise<boolean> {
  for (;;) {
    const wait = Math.max(1, Math.round(deadline - performance.now()));
    if (!(await portListening(host, port, Math.min(wait, 500)))) return true;
    if (performance.now() >= deadline) return false;
    await sleep(Math.min(20, wait));
  }
}
