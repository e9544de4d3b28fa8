import { execFile, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { connect } from 'node:net';
import { OutputLog } from './output-log.ts';
import { freePort, tmpDir, waitFor } from './proc.ts';
import type { TmpDir } from './proc.ts';
import { onProcessExit } from './reaper.ts';

/** A throwaway redis-server on 127.0.0.1 without persistence. */
export interface RedisServer {
  url: string;
  port: number;
  /** Stops the server and removes its directory. Idempotent. */
  stop(): Promise<void>;
  /** Stops the server and starts a fresh one (empty) on the same port, for reconnect tests. */
  restart(): Promise<void>;
  /** SIGSTOP: the server keeps its socket (the kernel still accepts connections) but answers nothing. */
  pause(): void;
  /** SIGCONT after {@link pause}. */
  resume(): void;
  /** One command through `redis-cli` (e.g. `FLUSHALL`, `EXISTS key`): its output, trimmed. */
  cli(...args: string[]): Promise<string>;
}

const START_TIMEOUT_MS = 15_000;
const STOP_GRACE_MS = 5_000;

/** Starts `redis-server` on a free port (`--save '' --appendonly no`) and waits until it answers PING. */
export async function startRedis(): Promise<RedisServer> {
  const dir = await tmpDir('heapcap-redis');
  // The server processes have their own last-resort killers (launch); this one removes the directory.
  const unregister = onProcessExit(() => dir.cleanupSync());
  let port = 0;
  let proc: Running | undefined;
  // redis-server needs an explicit port: we pick one that was free a moment ago,
  // and retry with another if something took it in between.
  for (let attempt = 1; !proc; attempt++) {
    port = await freePort();
    try {
      proc = await launch(port, dir);
    } catch (err) {
      if (attempt >= 3) {
        unregister();
        await dir.cleanup();
        throw err;
      }
    }
  }
  let current: Running = proc;
  let stopped: Promise<void> | undefined;
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    stop: () =>
      (stopped ??= (async () => {
        await current.stop();
        unregister();
        await dir.cleanup();
      })()),
    restart: async () => {
      if (stopped) throw new Error('redis was stopped; restart() is for a running server');
      await current.stop();
      current = await launch(port, dir);
    },
    pause: () => current.child.kill('SIGSTOP'),
    resume: () => current.child.kill('SIGCONT'),
    cli: (...args) => redisCli(port, args),
  };
}

/** One `redis-cli` command against 127.0.0.1:`port`: its output, trimmed. */
export function redisCli(port: number, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args], { timeout: 10_000 }, (err, stdout) => (err === null ? resolve(stdout.trim()) : reject(err)));
  });
}

export interface Running {
  child: ChildProcess;
  stop(): Promise<void>;
}

/**
 * Runs redis-server on `port` in `dir` and waits until it answers PING.
 * `extra` replaces the default no-persistence flags (`--save '' --appendonly no`) when given.
 */
export async function launch(port: number, dir: TmpDir, extra: readonly string[] = ['--save', '', '--appendonly', 'no']): Promise<Running> {
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', ...extra, '--dir', dir.path],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const unregister = onProcessExit(() => child.kill('SIGKILL'));
  const out = new OutputLog(child.stdout as NonNullable<typeof child.stdout>);
  const err = new OutputLog(child.stderr as NonNullable<typeof child.stderr>);
  let exited = false;
  const exit = new Promise<void>((resolve) => {
    const done = (): void => {
      exited = true;
      unregister();
      resolve();
    };
    child.once('exit', done);
    child.once('error', done);
  });
  const stop = async (): Promise<void> => {
    if (exited) return;
    child.kill('SIGTERM');
    // A paused server (pause()) only acts on SIGTERM once it runs again.
    child.kill('SIGCONT');
    const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
    try {
      await exit;
    } finally {
      clearTimeout(timer);
    }
  };
  try {
    await waitFor(
      async () => {
        if (exited) throw new Error('redis-server exited');
        return ping(port);
      },
      { timeoutMs: START_TIMEOUT_MS, intervalMs: 50, what: `redis-server on port ${port} to answer PING` },
    );
  } catch (e) {
    await stop();
    throw new Error(`redis-server did not start: ${(e as Error).message}\n${out.text()}${err.text()}`, { cause: e });
  }
  return { child, stop };
}

/** True when a Redis server on 127.0.0.1:`port` answers PING with +PONG within a second. */
function ping(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let reply = '';
    const finish = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1_000, () => finish(false));
    socket.on('error', () => finish(false));
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (d) => {
      reply += d.toString('utf8');
      if (reply.includes('\r\n')) finish(reply.startsWith('+PONG'));
    });
  });
}
