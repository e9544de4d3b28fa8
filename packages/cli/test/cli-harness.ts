/** Runs `heapcap capture …` as a child process, the way an operator does, and inspects what it left on disk. */
import { spawn, type SpawnOptions } from 'node:child_process';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { childEnv, heapcapOnThisNode } from '@heapcap/testkit';

/** The workspace root: the CLI runs with it as cwd. */
export const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/** What one CLI run produced. */
export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** performance.now() when the first stderr bytes arrived (undefined: none). */
  firstStderrAt: number | undefined;
  /** performance.now() when the child had exited and its output was complete. */
  endedAt: number;
}

/** Options for {@link startCli}. */
export interface CliOptions {
  /** Deadline for the whole run; the child is SIGKILLed after it (default 120 s). */
  timeoutMs?: number;
  env?: Record<string, string>;
  /** The heapcap command to run (default `capture`). */
  command?: string;
  /** Run as another user (e.g. nobody: 65534). */
  uid?: number;
  gid?: number;
  /**
   * Let `capture` print its progress (default false: `--quiet` is added). Off a
   * terminal a capture that lasts over 5 s prints plain progress lines before an
   * error; these tests read the error as stderr's first line. The progress itself
   * is tested in services/serve/test/progress-cli.test.ts.
   */
  progress?: boolean;
}

/** A running CLI child. */
export interface CliRun {
  pid: number;
  done: Promise<CliResult>;
  /** SIGKILL if still running (idempotent), for `finally` blocks. */
  kill(): void;
}

/** Starts `heapcap COMMAND ARGS` (COMMAND default `capture`) on this process's Node (testkit's heapcapOnThisNode: the bundle bin/heapcap runs) with cwd at the workspace root. */
export function startCli(args: string[], opts: CliOptions = {}): CliRun {
  const spawnOpts: SpawnOptions = {
    cwd: REPO_ROOT,
    // childEnv drops NODE_OPTIONS/NODE_TEST_CONTEXT, which belong to the test runner.
    env: childEnv(opts.env),
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(opts.uid === undefined ? {} : { uid: opts.uid }),
    ...(opts.gid === undefined ? {} : { gid: opts.gid }),
  };
  const command = opts.command ?? 'capture';
  const quiet = command === 'capture' && opts.progress !== true ? ['--quiet'] : [];
  const child = spawn(...heapcapOnThisNode([command, ...quiet, ...args]), spawnOpts);
  let stdout = '';
  let stderr = '';
  let firstStderrAt: number | undefined;
  child.stdout?.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr?.setEncoding('utf8').on('data', (d: string) => {
    firstStderrAt ??= performance.now();
    stderr += d;
  });
  let exited = false;
  const timeoutMs = opts.timeoutMs ?? 120_000;
  const done = new Promise<CliResult>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`heapcap ${opts.command ?? 'capture'} ${args.join(' ')} did not exit within ${timeoutMs} ms\nstderr:\n${stderr}`));
    }, timeoutMs);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    // 'close' (not 'exit'): stdout and stderr are complete.
    child.once('close', (code, signal) => {
      exited = true;
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, firstStderrAt, endedAt: performance.now() });
    });
  });
  return {
    pid: child.pid ?? -1,
    done,
    kill: () => {
      if (!exited) child.kill('SIGKILL');
    },
  };
}

/** Runs the CLI to completion. */
export async function runCli(args: string[], opts: CliOptions = {}): Promise<CliResult> {
  const run = startCli(args, opts);
  try {
    return await run.done;
  } finally {
    run.kill();
  }
}

/** Every file (not directory) under `dir`, as paths relative to it; [] when `dir` does not exist. */
export async function listFiles(dir: string): Promise<string[]> {
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true, recursive: true });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  return entries.filter((e) => !e.isDirectory()).map((e) => join(e.parentPath, e.name).slice(dir.length + 1)).sort();
}

/** Whether a process exists (signal 0). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
