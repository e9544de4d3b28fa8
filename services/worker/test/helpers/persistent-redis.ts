/**
 * A redis-server with an append-only file (fsync always) on a directory that
 * survives restart(): what a production Redis with persistence looks like.
 * (testkit's startRedis runs without persistence and restarts empty.)
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { freePort, tmpDir, waitFor } from '@heapcap/testkit';
import { Redis } from 'ioredis';

export interface PersistentRedis {
  url: string;
  /** SIGTERM (Redis flushes the AOF), then start again on the same port and directory. */
  restart(): Promise<void>;
  /** Kill it and remove its directory. */
  stop(): Promise<void>;
}

/** Start one on a free port. */
export async function startPersistentRedis(): Promise<PersistentRedis> {
  const dir = await tmpDir('heapcap-redis-aof');
  const port = await freePort();
  let child: ChildProcess | undefined;
  const launch = async (): Promise<void> => {
    const proc = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--appendonly', 'yes', '--appendfsync', 'always', '--save', '', '--dir', dir.path], {
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
        if (proc.exitCode !== null) throw new Error(`redis-server exited with ${proc.exitCode}`);
        const r = new Redis(port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
        r.on('error', () => {});
        try {
          await r.connect();
          // LOADING replies until the AOF is read back.
          return (await r.ping()) === 'PONG';
        } finally {
          r.disconnect();
        }
      },
      { timeoutMs: 15_000, intervalMs: 50, what: `redis-server (AOF) on ${port}` },
    );
  };
  const kill = async (): Promise<void> => {
    const proc = child;
    child = undefined;
    if (proc === undefined || proc.exitCode !== null) return;
    const exited = new Promise((resolve) => proc.once('exit', resolve));
    proc.kill('SIGTERM');
    const timer = setTimeout(() => proc.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
  };
  await launch();
  return {
    url: `redis://127.0.0.1:${port}`,
    restart: async () => {
      await kill();
      await launch();
    },
    stop: async () => {
      await kill();
      await dir.cleanup();
    },
  };
}
