/**
 * Child processes of the demo (target, Redis, service): started in their own
 * process group so a terminal's Ctrl-C reaches only the demo, which then stops
 * them in order (service first, so it never sees its Redis vanish mid-shutdown).
 * (The target and the private Redis are the test kit's own processes.)
 */
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';

/** A child the demo started, and how to stop it. */
export interface DemoChild {
  name: string;
  proc: ChildProcess;
  /** Milliseconds between the polite signal and SIGKILL. */
  graceMs: number;
}

const running: DemoChild[] = [];

/** True until the process has exited (or was killed by a signal). */
export function alive(proc: ChildProcess): boolean {
  return proc.exitCode === null && proc.signalCode === null;
}

/** Spawn `command` in a new process group and remember it for `stopAll`. */
export function startChild(name: string, command: string, args: string[], options: SpawnOptions, graceMs = 5_000): DemoChild {
  const proc = spawn(command, args, { ...options, detached: true });
  const child = { name, proc, graceMs };
  running.push(child);
  // A spawn error (e.g. ENOENT) must not become an uncaught exception; callers see the exit instead.
  proc.once('error', () => undefined);
  return child;
}

/** Resolves when `proc` has exited, or with false after `ms`. */
export function exited(proc: ChildProcess, ms: number): Promise<boolean> {
  if (!alive(proc)) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      proc.off('exit', onExit);
      resolve(false);
    }, ms);
    const onExit = (): void => {
      clearTimeout(timer);
      resolve(true);
    };
    proc.once('exit', onExit);
  });
}

function signalGroup(proc: ChildProcess, signal: NodeJS.Signals): void {
  if (proc.pid === undefined) return;
  try {
    // The whole group: `heapcap serve` runs the service in a grandchild.
    process.kill(-proc.pid, signal);
  } catch {
    // Already gone.
  }
}

/** SIGTERM the child's group, then SIGKILL after its grace period. Idempotent. */
export async function stopChild(child: DemoChild): Promise<void> {
  if (alive(child.proc)) {
    signalGroup(child.proc, 'SIGTERM');
    if (!(await exited(child.proc, child.graceMs))) {
      signalGroup(child.proc, 'SIGKILL');
      await exited(child.proc, 2_000);
    }
  }
  // A grandchild may outlive its parent; the group kill is harmless when empty.
  signalGroup(child.proc, 'SIGKILL');
  const i = running.indexOf(child);
  if (i >= 0) running.splice(i, 1);
}

/** Stop every child still running, newest first (the service before its Redis and target). */
export async function stopAll(): Promise<string[]> {
  const stopped: string[] = [];
  for (const child of [...running].reverse()) {
    await stopChild(child);
    stopped.push(child.name);
  }
  return stopped;
}

// Backstop for paths that skip stopAll (an exception, process.exit): no orphans.
process.on('exit', () => {
  for (const child of running) signalGroup(child.proc, 'SIGKILL');
});
