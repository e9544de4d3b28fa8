/**
 * Redis for the demo: is one answering at HEAPCAP_REDIS_URL, is redis-server
 * installed, and installing it when it is not. (The private redis-server the
 * demo starts otherwise is the test kit's: a free loopback port, a throw-away
 * data directory, no RDB, no AOF.)
 */
import { spawnSync } from 'node:child_process';
import { createServer, connect as tcpConnect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';

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

/**
 * Install redis-server with apt-get when this process may (root, Debian-like),
 * as `npm test` does for its own dependencies. Returns what happened, for the
 * demo to say; never throws.
 */
export function installRedisServer(): { installed: boolean; why: string } {
  if (process.getuid?.() !== 0) return { installed: false, why: 'not root (install it with: sudo apt-get install redis-server)' };
  if (spawnSync('apt-get', ['--version'], { stdio: 'ignore' }).status !== 0) return { installed: false, why: 'no apt-get on this machine' };
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const update = spawnSync('apt-get', ['update', '-qq'], { stdio: 'ignore', env, timeout: 300_000 });
  const install = update.status === 0 ? spawnSync('apt-get', ['install', '-y', '-qq', 'redis-server'], { stdio: 'ignore', env, timeout: 600_000 }) : update;
  if (install.status !== 0 || !haveRedisServer()) return { installed: false, why: `apt-get ${update.status === 0 ? 'install' : 'update'} failed (exit ${install.status ?? install.signal})` };
  return { installed: true, why: 'installed with apt-get' };
}
