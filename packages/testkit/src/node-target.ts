import { spawn } from 'node:child_process';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { childEnv, nodeBinary } from './node-bin.ts';
import type { NodeVersion } from './node-bin.ts';
import { OutputLog } from './output-log.ts';
import { onProcessExit } from './reaper.ts';

/** How to start a Node target; `script` is a .js/.cjs/.mjs file that prints `READY` when set up. */
export interface NodeTargetOptions {
  node?: NodeVersion;
  script: string;
  args?: string[];
  /** Default true: `--inspect=127.0.0.1:0` (the port is read back from stderr). */
  inspect?: boolean;
  /** Flags placed before the script, e.g. `--max-old-space-size=256`. */
  nodeFlags?: string[];
  env?: Record<string, string>;
  /** Deadline for the inspector line and `READY`; default 30 s. */
  readyTimeoutMs?: number;
  /**
   * Start it through a launcher that execs node in the same process (so `pid`
   * stays node's), e.g. `unshare` for a target in another mount namespace:
   * gets node's path and argv, returns the command and its arguments.
   */
  wrap?: (bin: string, argv: string[]) => [string, string[]];
}

/** How a child ended. */
export interface ExitStatus {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** A running Node target process. */
export interface NodeTarget {
  pid: number;
  /** Inspector port, undefined when started without `--inspect`. */
  port: number | undefined;
  /** Inspector WebSocket URL, undefined when started without `--inspect`. */
  wsUrl: string | undefined;
  child: ChildProcessWithoutNullStreams;
  stdoutText(): string;
  stderrText(): string;
  /** Writes one line to the target's stdin (the fixtures' command channel). */
  send(line: string): void;
  /** Sends a command line and resolves with the next stdout line starting with `replyPrefix`. */
  request(line: string, replyPrefix: string, timeoutMs?: number): Promise<string>;
  /** Resolves with the first match of `pattern` in stderr (e.g. the inspector line after SIGUSR1). */
  waitForStderr(pattern: RegExp, timeoutMs?: number): Promise<RegExpExecArray>;
  /** Resolves when the process exits; rejects after `timeoutMs` (default 30 s). */
  waitExit(timeoutMs?: number): Promise<ExitStatus>;
  /** Sends `signal` (default SIGTERM), SIGKILL after 5 s, and waits for exit. Idempotent. */
  kill(signal?: NodeJS.Signals): Promise<void>;
}

const INSPECTOR_LINE = /Debugger listening on (ws:\/\/127\.0\.0\.1:(\d+)\/[\w-]+)/;
const KILL_GRACE_MS = 5_000;

/** Starts `node [nodeFlags] [--inspect=127.0.0.1:0] script [args]` and waits for its `READY` line. */
export async function startNodeTarget(opts: NodeTargetOptions): Promise<NodeTarget> {
  const bin = await nodeBinary(opts.node ?? 'system');
  const inspect = opts.inspect ?? true;
  const argv = [
    ...(opts.nodeFlags ?? []),
    ...(inspect ? ['--inspect=127.0.0.1:0'] : []),
    opts.script,
    ...(opts.args ?? []),
  ];
  const [cmd, args] = opts.wrap === undefined ? [bin, argv] : opts.wrap(bin, argv);
  const child = spawn(cmd, args, { env: childEnv(opts.env), stdio: 'pipe' });
  const unregister = onProcessExit(() => child.kill('SIGKILL'));
  // A target that dies makes writes to its stdin fail with EPIPE; that is not our error.
  child.stdin.on('error', () => {});
  const stdout = new OutputLog(child.stdout);
  const stderr = new OutputLog(child.stderr);

  let status: ExitStatus | undefined;
  const exited = new Promise<ExitStatus>((resolve) => {
    child.once('exit', (code, signal) => {
      status = { code, signal };
      unregister();
      resolve(status);
    });
    child.once('error', () => {
      // Spawn failure: no 'exit' follows.
      status ??= { code: null, signal: null };
      unregister();
      resolve(status);
    });
  });

  const waitExit = (timeoutMs = 30_000): Promise<ExitStatus> =>
    withDeadline(exited, timeoutMs, `exit of pid ${child.pid}`);

  let killing: Promise<void> | undefined;
  const kill = (signal: NodeJS.Signals = 'SIGTERM'): Promise<void> =>
    (killing ??= (async () => {
      if (status) return;
      child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), KILL_GRACE_MS);
      try {
        await waitExit(KILL_GRACE_MS + 10_000);
      } finally {
        clearTimeout(timer);
      }
    })());

  const waitForStderr = (pattern: RegExp, timeoutMs = 30_000): Promise<RegExpExecArray> =>
    waitMatch(stderr, pattern, timeoutMs, exited);

  const readyTimeoutMs = opts.readyTimeoutMs ?? 30_000;
  let wsUrl: string | undefined;
  let port: number | undefined;
  try {
    const [inspector] = await Promise.all([
      inspect ? waitForStderr(INSPECTOR_LINE, readyTimeoutMs) : Promise.resolve(undefined),
      raceExit(stdout.waitLine((l) => l === 'READY', 0, readyTimeoutMs, 'READY on stdout'), exited),
    ]);
    wsUrl = inspector?.[1];
    port = inspector?.[2] ? Number(inspector[2]) : undefined;
  } catch (err) {
    child.kill('SIGKILL');
    await waitExit(10_000).catch(() => undefined);
    throw new Error(
      `node target ${opts.script} (${bin}) did not become ready: ${(err as Error).message}\n` +
        `exit: ${JSON.stringify(status)}\nstderr:\n${stderr.text()}\nstdout:\n${stdout.text()}`,
      { cause: err },
    );
  }

  return {
    pid: child.pid as number,
    port,
    wsUrl,
    child,
    stdoutText: () => stdout.text(),
    stderrText: () => stderr.text(),
    send: (line) => {
      child.stdin.write(`${line}\n`);
    },
    request: (line, replyPrefix, timeoutMs = 300_000) => {
      const from = stdout.lineCount();
      child.stdin.write(`${line}\n`);
      return raceExit(
        stdout.waitLine((l) => l.startsWith(replyPrefix), from, timeoutMs, `"${replyPrefix}" reply to "${line}"`),
        exited,
      );
    },
    waitForStderr,
    waitExit,
    kill,
  };
}

function withDeadline<T>(p: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)), timeoutMs);
  });
  return Promise.race([p, deadline]).finally(() => clearTimeout(timer));
}

/** Rejects as soon as the process exits, so a dead target fails a wait at once instead of at its deadline. */
function raceExit<T>(p: Promise<T>, exited: Promise<ExitStatus>): Promise<T> {
  const died = exited.then((s): never => {
    throw new Error(`process exited (code ${s.code}, signal ${s.signal})`);
  });
  died.catch(() => {});
  return Promise.race([p, died]);
}

function waitMatch(log: OutputLog, pattern: RegExp, timeoutMs: number, exited: Promise<ExitStatus>): Promise<RegExpExecArray> {
  let found: RegExpExecArray | null = null;
  return raceExit(
    log.waitLine((l) => (found = pattern.exec(l)) !== null, 0, timeoutMs, `stderr matching ${pattern}`),
    exited,
  ).then(() => found as RegExpExecArray);
}
