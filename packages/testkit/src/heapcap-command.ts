/**
 * The `heapcap` command as users run it (`bin/heapcap`, the bundled build), for
 * tests of what the README shows: one-shot commands with their output and exit
 * code, and `heapcap serve` as a long-running process with its URL. Only the
 * HEAPCAP_* variables a test passes reach the command, so a developer's own
 * settings never leak in.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { OutputLog } from './output-log.ts';
import { freePort, waitFor } from './proc.ts';
import { onProcessExit } from './reaper.ts';

/** The workspace root (where bin/heapcap lives). */
export const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '../../..');
/** The command users type. */
export const HEAPCAP_BIN = join(REPO_ROOT, 'bin/heapcap');

/** How to run one command. */
export interface HeapcapRunOptions {
  /** HEAPCAP_* and other variables for the command (added to a scrubbed copy of this process's environment). */
  env?: Record<string, string>;
  /** Working directory (default: the workspace root). */
  cwd?: string;
  /** Deadline for the whole command (default 120 s). */
  timeoutMs?: number;
  /** The executable (default bin/heapcap): e.g. a copy of bin/heapcap beside a shipped dist/. */
  bin?: string;
}

/** What a finished command printed and how it exited. */
export interface HeapcapResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * This process's environment without HEAPCAP_* (a developer's settings must not
 * leak into a test), NODE_OPTIONS and the test runner's NODE_TEST_CONTEXT, plus `extra`.
 */
export function commandEnv(extra: Record<string, string> = {}): Record<string, string> {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k, v]) => !k.startsWith('HEAPCAP_') && k !== 'NODE_OPTIONS' && k !== 'NODE_TEST_CONTEXT' && v !== undefined)) as Record<string, string>;
  // Every target is sampled each minute by default (HEAPCAP_SAMPLE_INTERVAL): off in tests unless a test turns it on,
  // so a test's targets see only the sessions the test means them to.
  return { ...base, HEAPCAP_LOG_LEVEL: 'warn', HEAPCAP_SAMPLE_INTERVAL: '0', ...extra };
}

/** Spawn `cmd args` with the scrubbed environment; killed if this process dies. */
function spawnTracked(cmd: string, args: string[], opts: HeapcapRunOptions): ChildProcess {
  const child = spawn(cmd, args, { cwd: opts.cwd ?? REPO_ROOT, env: commandEnv(opts.env), stdio: ['ignore', 'pipe', 'pipe'] });
  const unregister = onProcessExit(() => child.kill('SIGKILL'));
  child.once('exit', unregister);
  return child;
}

/** Run `bin/heapcap ARGS` to completion; rejects only when it outlives its deadline (then it is killed). */
export async function runHeapcap(args: string[], opts: HeapcapRunOptions = {}): Promise<HeapcapResult> {
  return runCommand(opts.bin ?? HEAPCAP_BIN, args, opts);
}

/** The bundled command bin/heapcap runs. */
export const HEAPCAP_BUNDLE = join(REPO_ROOT, 'dist/heapcap.mjs');

let bundleChecked = false;

/**
 * Builds dist/ when a source is newer than it, by bin/heapcap's own check
 * under its lock (`bin/heapcap --version`): once per process, before the
 * first command that runs the bundle directly. Blocks while a build runs.
 */
export function ensureBundle(): void {
  if (bundleChecked) return;
  const res = spawnSync(HEAPCAP_BIN, ['--version'], { cwd: REPO_ROOT, env: commandEnv(), encoding: 'utf8', timeout: 600_000 });
  if (res.status !== 0) throw new Error(`bin/heapcap --version (it builds dist/ when a source is newer) exited ${res.status ?? res.signal}:\n${res.stderr}`);
  bundleChecked = true;
}

/**
 * The command and arguments that run `heapcap ARGS` on this process's Node:
 * the bundle with bin/heapcap's own Node flags (bin/heapcap runs the `node`
 * on PATH; the CLI's tests run it on the Node of their runtime, 20 or 22).
 * About 0.3 CPU-seconds a command where `node --import tsx` on the sources
 * took 1.2, and it is the code that ships.
 */
export function heapcapOnThisNode(args: string[]): [string, string[]] {
  ensureBundle();
  return [process.execPath, ['--max-semi-space-size=2', HEAPCAP_BUNDLE, ...args]];
}

/** Run `heapcap ARGS` on this process's Node ({@link heapcapOnThisNode}), collecting its exit and output. */
export function runHeapcapHere(args: string[], opts: HeapcapRunOptions = {}): Promise<HeapcapResult> {
  return runCommand(...heapcapOnThisNode(args), opts);
}

/** Run any command the README shows (npm run …) the same way: scrubbed environment, output kept, deadline. */
export function runCommand(cmd: string, args: string[], opts: HeapcapRunOptions = {}): Promise<HeapcapResult> {
  const child = spawnTracked(cmd, args, opts);
  const out = new OutputLog(child.stdout!);
  const err = new OutputLog(child.stderr!);
  const timeoutMs = opts.timeoutMs ?? 120_000;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${cmd} ${args.join(' ')} did not finish within ${timeoutMs} ms\nstdout: ${out.text()}\nstderr: ${err.text()}`));
    }, timeoutMs);
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout: out.text(), stderr: err.text() });
    });
  });
}

/** A running `heapcap serve` (or `api`). */
export interface RunningHeapcap {
  child: ChildProcess;
  pid: number;
  /** Base URL it serves on, e.g. `http://127.0.0.1:41234`. */
  url: string;
  stdout: OutputLog;
  stderr: OutputLog;
  /** Send `signal` (default SIGTERM) and wait for the exit (SIGKILL after `graceMs`, default 40 s); resolves with the exit code. */
  stop(signal?: NodeJS.Signals, graceMs?: number): Promise<number | null>;
}

/**
 * HEAPCAP_PORT for {@link startHeapcap}: a free loopback port picked at start, and
 * another one when some other process takes it first. A port found free is
 * only free until someone binds it: the suite's other files open connections
 * and listeners all the time, and once one took the port between the pick and
 * serve's listen (EADDRINUSE, exit 2).
 */
export const FREE_PORT = 'free';

/** Start `bin/heapcap ARGS` (serve, api) and wait until it says where it serves (default 60 s: the first run builds the bundle). */
export async function startHeapcap(args: string[], opts: HeapcapRunOptions = {}): Promise<RunningHeapcap> {
  if (opts.env?.['HEAPCAP_PORT'] !== FREE_PORT) return startOnce(args, opts);
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(args, { ...opts, env: { ...opts.env, HEAPCAP_PORT: String(await freePort()) } });
    } catch (err) {
      if (attempt >= 5 || !(err instanceof Error) || !err.message.includes('EADDRINUSE')) throw err;
    }
  }
}

async function startOnce(args: string[], opts: HeapcapRunOptions): Promise<RunningHeapcap> {
  const child = spawnTracked(opts.bin ?? HEAPCAP_BIN, args, opts);
  const stdout = new OutputLog(child.stdout!);
  const stderr = new OutputLog(child.stderr!);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const seen = await waitFor(
    // An exit before the line ends the wait at once (a thrown error would only count as "not yet").
    () => stderr.lines().find((l) => l.startsWith('heapcap serving on ')) ?? (child.exitCode !== null ? { exitCode: child.exitCode } : undefined),
    { timeoutMs: opts.timeoutMs ?? 60_000, intervalMs: 50, what: `heapcap ${args.join(' ')} to listen` },
  ).catch((err: unknown) => {
    child.kill('SIGKILL');
    throw err;
  });
  if (typeof seen !== 'string') throw new Error(`heapcap ${args.join(' ')} exited with ${seen.exitCode}: ${stderr.text()}`);
  const line = seen;
  const url = /^heapcap serving on (http:\/\/\S+)/.exec(line)![1]!;
  return {
    child,
    pid: child.pid!,
    url,
    stdout,
    stderr,
    async stop(signal = 'SIGTERM', graceMs = 40_000) {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      try {
        return await exited;
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

/**
 * `heapcap serve --dev` for a test, in `workDir`: the Redis at `redisUrl`, a free
 * port, `workDir/targets.yaml` as the targets file (an empty one written when missing), file storage under
 * `workDir/captures`, the retention janitor out of the way (hourly); `env` adds
 * or overrides settings.
 */
export async function startDevServe(workDir: string, redisUrl: string, env: Record<string, string> = {}): Promise<RunningHeapcap> {
  // HEAPCAP_TARGETS_FILE set to a file that is not there refuses to start: an empty one unless the test wrote its own.
  await writeFile(join(workDir, 'targets.yaml'), 'targets: []\n', { flag: 'wx' }).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'EEXIST') throw err;
  });
  return startHeapcap(['serve', '--dev'], {
    cwd: workDir,
    env: {
      HEAPCAP_REDIS_URL: redisUrl,
      HEAPCAP_PORT: FREE_PORT,
      HEAPCAP_TARGETS_FILE: join(workDir, 'targets.yaml'),
      HEAPCAP_STORAGE: `file://${join(workDir, 'captures')}`,
      HEAPCAP_RETENTION_INTERVAL: '1h',
      ...env,
    },
  });
}
