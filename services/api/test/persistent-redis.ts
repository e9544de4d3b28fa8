/**
 * A redis-server with an append-only file that can be stopped and started
 * again on the same port and data dir: an outage after which the data is
 * still there (testkit's restart() starts an empty server).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { connect } from 'node:net';
import { freePort, tmpDir, waitFor, type TmpDir } from '@heapcap/testkit';

/** A stoppable, restartable Redis with persistence. */
export interface PersistentRedis {
  url: string;
  /** Stops the server (SIGTERM, waits for exit); the data stays on disk. */
  stop(): Promise<void>;
  /** Starts it again on the same port and data. */
  start(): Promise<void>;
  /** Stops it and removes the data dir. Idempotent. */
  destroy(): Promise<void>;
}

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

/** Starts redis-server with `--appendonly yes --appendfsync always` on a free port. */
export async function startPersistentRedis(): Promise<PersistentRedis> {
  const dir: TmpDir = await tmpDir('heapcap-api-redis');
  const port = await freePort();
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();

  const start = async (): Promise<void> => {
    const c = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'yes', '--appendfsync', 'always', '--dir', dir.path], {
      stdio: 'ignore',
    });
    child = c;
    exited = new Promise((resolve) => c.once('exit', () => resolve()));
    await waitFor(() => ping(port), { timeoutMs: 15_000, intervalMs: 50, what: `redis-server on ${port}` });
  };
  const stop = async (): Promise<void> => {
    if (child === undefined || child.exitCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child?.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
  };
  let destroyed: Promise<void> | undefined;
  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    stop,
    start,
    destroy: () =>
      (destroyed ??= (async () => {
        await stop();
        await dir.cleanup();
      })()),
  };
}
