/**
 * A redis-server with an append-only file (fsync always) on a directory that
 * survives stop/start: what a production Redis with persistence looks like, for
 * outage tests after which the data is still there. (`startRedis` runs without
 * persistence and restarts empty: the "Redis lost its data" case.)
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readdir, rm } from 'node:fs/promises';
import { connect } from 'node:net';
import { join } from 'node:path';
import { freePort, GiveUp, tmpDir, waitFor } from './proc.ts';

/** A stoppable, restartable Redis with persistence. */
export interface PersistentRedis {
  url: string;
  port: number;
  /** SIGTERM (Redis flushes the AOF) and wait for the exit; the data stays on disk. */
  stop(): Promise<void>;
  /** Start again on the same port and data; resolves once it answers PING (after loading the AOF). */
  start(): Promise<void>;
  /** stop() then start(). */
  restart(): Promise<void>;
  /** SIGKILL (no AOF flush) and wait for the exit. */
  kill(): Promise<void>;
  /** Remove the data files of a stopped server: the next start() is an empty Redis, as after losing its volume. */
  wipe(): Promise<void>;
  /** Freeze the server (SIGSTOP): connections stay open, nothing answers. */
  pause(): void;
  /** Thaw it (SIGCONT): what clients sent meanwhile is executed now. */
  resume(): void;
  /** Stop it and remove its directory. Idempotent. */
  destroy(): Promise<void>;
}

/** PONG within a second? (`-LOADING` while the AOF is read back is not PONG.) */
function ping(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1_000, () => done(false));
    socket.on('error', () => done(false));
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (d) => done(d.toString().startsWith('+PONG')));
  });
}

/** Start redis-server with `--appendonly yes --appendfsync always` on a free port. */
export async function startPersistentRedis(): Promise<PersistentRedis> {
  const dir = await tmpDir('heapcap-redis-aof');
  const port = await freePort();
  let child: ChildProcess | undefined;
  const start = async (): Promise<void> => {
    const proc = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'yes', '--appendfsync', 'always', '--dir', dir.path], {
      stdio: 'ignore',
    });
    child = proc;
    // A test that dies must not leave redis-server behind.
    const reap = (): void => {
      proc.kill('SIGKILL');
    };
    process.once('exit', reap);
    proc.once('exit', () => process.off('exit', reap));
    await waitFor(
      async () => {
        if (proc.exitCode !== null) throw new GiveUp(`redis-server exited with ${proc.exitCode}`);
        return ping(port);
      },
      { timeoutMs: 15_000, intervalMs: 50, what: `redis-server (AOF) on ${port}` },
    );
  };
  const stop = async (signal: 'SIGTERM' | 'SIGKILL' = 'SIGTERM'): Promise<void> => {
    const proc = child;
    child = undefined;
    if (proc === undefined || proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise((resolve) => proc.once('exit', resolve));
    // A paused server cannot act on SIGTERM until it runs again.
    proc.kill('SIGCONT');
    proc.kill(signal);
    const timer = setTimeout(() => proc.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
  };
  let destroyed: Promise<void> | undefined;
  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    stop: () => stop(),
    start,
    kill: () => stop('SIGKILL'),
    wipe: async () => {
      if (child !== undefined) throw new Error('wipe() needs the server stopped');
      for (const name of await readdir(dir.path)) await rm(join(dir.path, name), { recursive: true, force: true });
    },
    restart: async () => {
      await stop();
      await start();
    },
    pause: () => {
      child?.kill('SIGSTOP');
    },
    resume: () => {
      child?.kill('SIGCONT');
    },
    destroy: () =>
      (destroyed ??= (async () => {
        await stop();
        await dir.cleanup();
      })()),
  };
}
