import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/** Options for {@link waitFor}: a deadline is mandatory, the interval is not. */
export interface WaitForOptions {
  timeoutMs: number;
  intervalMs?: number;
  /** Names the awaited condition in the timeout error. */
  what: string;
}

/** A temporary directory and the functions that remove it (idempotent). */
export interface TmpDir {
  path: string;
  cleanup(): Promise<void>;
  /** Best-effort synchronous removal, for process 'exit' hooks; never throws. */
  cleanupSync(): void;
}

function statusField(pid: number, field: string): number {
  // /proc/PID/status lines look like "VmHWM:\t  123456 kB".
  const text = readFileSync(`/proc/${pid}/status`, 'utf8');
  const match = new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(text);
  if (!match?.[1]) throw new Error(`no ${field} in /proc/${pid}/status`);
  return Number(match[1]);
}

/** Peak resident set size of a live process in KiB (VmHWM); throws if the process is gone. */
export function peakRssKb(pid: number): number {
  return statusField(pid, 'VmHWM');
}

/** Current resident set size of a live process in KiB (VmRSS); throws if the process is gone. */
export function rssKb(pid: number): number {
  return statusField(pid, 'VmRSS');
}

/** The nice value of every thread of `pid` (field 19 of /proc/PID/task/TID/stat); threads that end meanwhile are skipped. */
export function threadNiceValues(pid: number): number[] {
  const out: number[] = [];
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      // The fields after the command name (which may hold spaces and parentheses) start at field 3.
      out.push(Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]));
    } catch {
      // The thread ended.
    }
  }
  return out;
}

/**
 * The first port of the kernel's ephemeral range (where it picks the local port
 * of every outgoing connection and of every bind to port 0); 32768 where
 * /proc cannot tell.
 */
function ephemeralFloor(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > 2_048 ? low : 32_768;
  } catch {
    return 32_768;
  }
}

/** Resolves with `port` if 127.0.0.1:`port` can be bound now (then closed again), else undefined. */
function tryBind(port: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(undefined));
    server.listen(port, '127.0.0.1', () => {
      const addr = server.address();
      const bound = typeof addr === 'object' && addr ? addr.port : undefined;
      server.close(() => resolve(bound));
    });
  });
}

/**
 * A TCP port on 127.0.0.1 that was free a moment ago, for a process to bind
 * next. Picked at random below the kernel's ephemeral range: the kernel never
 * gives those ports to an outgoing connection, and the suite's other files
 * open connections all the time (one took a port picked by binding to 0 while
 * the demo's bootstrap ran, and serve failed with EADDRINUSE). Only another
 * listener can still take it in between; startHeapcap's FREE_PORT retries then.
 */
export async function freePort(): Promise<number> {
  const high = ephemeralFloor() - 1;
  const low = Math.min(20_000, high - 1_000);
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = await tryBind(low + Math.floor(Math.random() * (high - low + 1)));
    if (port !== undefined) return port;
  }
  const any = await tryBind(0);
  if (any === undefined) throw new Error('freePort: no port could be bound on 127.0.0.1');
  return any;
}

/**
 * Thrown by a {@link waitFor} condition when waiting longer cannot help (the
 * process it waits on has exited): the wait ends at once with this error.
 */
export class GiveUp extends Error {
  override name = 'GiveUp';
}

/**
 * Polls `fn` until it returns a truthy value (which is returned) or the deadline passes.
 * Errors thrown by `fn` count as "not yet"; the last one is reported on timeout.
 * A {@link GiveUp} thrown by `fn` ends the wait at once.
 */
export async function waitFor<T>(
  fn: () => T | Promise<T>,
  opts: WaitForOptions,
): Promise<NonNullable<T>> {
  const deadline = performance.now() + opts.timeoutMs;
  const interval = opts.intervalMs ?? 50;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await fn();
      if (value) return value as NonNullable<T>;
    } catch (err) {
      if (err instanceof GiveUp) throw err;
      lastError = err;
    }
    if (performance.now() >= deadline) {
      const cause = lastError instanceof Error ? `: ${lastError.message}` : '';
      throw new Error(`timed out after ${opts.timeoutMs} ms waiting for ${opts.what}${cause}`, {
        cause: lastError,
      });
    }
    await sleep(interval);
  }
}

/** Creates a fresh directory under os.tmpdir(); `cleanup()` removes it recursively. */
export async function tmpDir(prefix: string): Promise<TmpDir> {
  const path = await mkdtemp(join(tmpdir(), `${prefix.replace(/[^\w.-]/g, '_')}-`));
  let removed: Promise<void> | undefined;
  return {
    path,
    cleanup: () => (removed ??= rm(path, { recursive: true, force: true, maxRetries: 5 })),
    cleanupSync: () => {
      try {
        rmSync(path, { recursive: true, force: true, maxRetries: 2 });
      } catch {
        // A process still writing into it may win the race; nothing more to do while exiting.
      }
    },
  };
}
