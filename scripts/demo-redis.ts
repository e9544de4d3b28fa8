/**
 * Redis for the demo: the one at HEAPCAP_REDIS_URL when something answers
 * there, else a private `redis-server` on a free loopback port with a
 * throw-away data directory (no RDB, no AOF: nothing outlives the demo).
 */
import { spawnSync } from 'node:child_process';
import { createServer, connect as tcpConnect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { alive, startChild, sleep, stopChild, type DemoChild } from './demo-procs.ts';

/** One RESP command (an array of bulk strings). */
function resp(...args: string[]): string {
  return `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`;
}

/** What a Redis URL answered: PONG, an error reply (e.g. WRONGPASS), or nothing. */
export type RedisProbe = { ok: true } | { ok: false; why: string };

/** Whether a Redis at `url` answers PING (after AUTH when the URL has credentials) within `ms`. */
export function probeRedis(url: string, ms = 1_500): Promise<RedisProbe> {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return Promise.resolve({ ok: false, why: 'not a URL' });
  }
  const port = Number(u.port || 6379);
  const host = u.hostname.replace(/^\[|\]$/g, '') || '127.0.0.1';
  return new Promise((resolve) => {
    const socket: Socket = u.protocol === 'rediss:' ? tlsConnect({ host, port, servername: host }) : tcpConnect({ host, port });
    let reply = '';
    const done = (r: RedisProbe): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(r);
    };
    const timer = setTimeout(() => done({ ok: false, why: `no answer within ${ms} ms` }), ms);
    socket.once(u.protocol === 'rediss:' ? 'secureConnect' : 'connect', () => {
      const password = decodeURIComponent(u.password);
      const user = decodeURIComponent(u.username);
      const auth = password === '' ? '' : user === '' ? resp('AUTH', password) : resp('AUTH', user, password);
      socket.write(`${auth}${resp('PING')}`);
    });
    socket.on('data', (d: Buffer) => {
      reply += d.toString('latin1');
      if (reply.includes('+PONG')) done({ ok: true });
      else if (reply.startsWith('-') && reply.includes('\r\n')) done({ ok: false, why: `it answered ${reply.slice(1, reply.indexOf('\r\n'))}` });
    });
    socket.once('error', (err: NodeJS.ErrnoException) => done({ ok: false, why: err.code ?? err.message }));
    socket.once('close', () => done({ ok: false, why: 'connection closed' }));
  });
}

/** A free TCP port on 127.0.0.1 (free now; a race with another process is possible, callers retry). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === 'object' && addr !== null ? resolve(addr.port) : reject(new Error('no port'))));
    });
  });
}

/** True when nothing listens on 127.0.0.1:`port`. */
export function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

/** True when `redis-server` is on PATH. */
export function haveRedisServer(): boolean {
  return spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0;
}

/** A running private Redis. */
export interface PrivateRedis {
  url: string;
  child: DemoChild;
}

/** Start `redis-server` on a free loopback port with `dir` as its data directory; waits until it answers (10 s). */
export async function startPrivateRedis(dir: string, signal: AbortSignal): Promise<PrivateRedis> {
  let lastError = 'did not answer';
  // Three tries: the free port can be taken between choosing it and redis binding it.
  for (let attempt = 0; attempt < 3 && !signal.aborted; attempt++) {
    const port = await freePort();
    const child = startChild('redis', 'redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no', '--protected-mode', 'yes'], { stdio: 'ignore' }, 5_000);
    const url = `redis://127.0.0.1:${port}`;
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline && !signal.aborted) {
      if ((await probeRedis(url, 500)).ok) return { url, child };
      if (!alive(child.proc)) break;
      await sleep(100, signal);
    }
    lastError = child.proc.exitCode !== null ? `exited with code ${child.proc.exitCode}` : 'did not answer within 10 s';
    await stopChild(child);
  }
  throw new Error(`redis-server ${lastError}`);
}
