/** Ordered shutdown with a time limit: each step bounded, every step attempted, a backstop for the whole. */
import type { Logger } from 'pino';

/** One step of a shutdown, run in order. */
export interface CloseStep {
  name: string;
  close: () => Promise<unknown>;
  /** The step's own limit; the sequence moves on after it. */
  timeoutMs: number;
}

/**
 * Resolve on the first SIGTERM or SIGINT; later signals are ignored (shutdown is
 * already under way and has its own deadline). A terminal's Ctrl-C can arrive
 * more than once, and must not kill a shutdown half-way.
 */
export function shutdownSignal(log: Logger): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    let seen = false;
    const on = (signal: NodeJS.Signals): void => {
      if (seen) {
        log.warn({ signal }, 'already shutting down');
        return;
      }
      seen = true;
      log.info({ signal }, 'shutting down');
      resolve(signal);
    };
    process.on('SIGTERM', on);
    process.on('SIGINT', on);
  });
}

/** Exit after `ms` no matter what is still open (the shutdown time limit's backstop). */
export function exitAfter(ms: number, code = 1): void {
  setTimeout(() => process.exit(code), ms).unref();
}

/**
 * Run `steps` in order, each within its limit and (when `deadline`, epoch ms, is
 * given) within what is left of the deadline, but at least 1 s, so that the last
 * steps (Redis, store) still run; a failed or late step is logged and the next one runs.
 */
export async function runShutdown(steps: CloseStep[], log: Logger, deadline = Number.POSITIVE_INFINITY): Promise<void> {
  for (const step of steps) {
    let timer: NodeJS.Timeout | undefined;
    const limitMs = Math.min(step.timeoutMs, Math.max(1_000, deadline - Date.now()));
    const late = new Promise<'late'>((resolve) => {
      timer = setTimeout(() => resolve('late'), limitMs);
    });
    try {
      const outcome = await Promise.race([step.close().then(() => 'done' as const), late]);
      if (outcome === 'late') log.warn({ step: step.name, timeoutMs: limitMs }, 'shutdown step did not finish in time; continuing');
    } catch (err) {
      log.warn({ err, step: step.name }, 'shutdown step failed; continuing');
    } finally {
      clearTimeout(timer);
    }
  }
}
