/**
 * The TCP ports a local process listens on, from /proc (Linux): the socket
 * inodes among /proc/PID/fd joined with the LISTEN rows of /proc/PID/net/tcp
 * and tcp6. Used to find where a SIGUSR1 actually opened a target's inspector
 * when it is not where the caller said (`--port`), so heapcap can close it.
 */
import { readdir, readFile, readlink } from 'node:fs/promises';

/** One listening socket: the address to connect to (loopback for a wildcard) and its port. */
export interface ListeningPort {
  host: string;
  port: number;
}

/** `0A` is TCP_LISTEN in the kernel's st column. */
const TCP_LISTEN = '0A';

/**
 * The ports `pid` listens on, or undefined when /proc cannot tell (not Linux,
 * or another user's process whose fd directory is not readable).
 */
export async function listeningPorts(pid: number): Promise<ListeningPort[] | undefined> {
  let inodes: Set<string>;
  try {
    const fds = await readdir(`/proc/${pid}/fd`);
    const links = await Promise.all(fds.map((fd) => readlink(`/proc/${pid}/fd/${fd}`).catch(() => '')));
    inodes = new Set(links.map((l) => /^socket:\[(\d+)\]$/.exec(l)?.[1]).filter((i): i is string => i !== undefined));
  } catch {
    return undefined;
  }
  const found: ListeningPort[] = [];
  for (const [file, v6] of [['tcp', false], ['tcp6', true]] as const) {
    let table: string;
    try {
      table = await readFile(`/proc/${pid}/net/${file}`, 'utf8');
    } catch {
      continue; // no IPv6 in this kernel
    }
    for (const line of table.split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
      const [local, state, inode] = [cols[1], cols[3], cols[9]];
      if (local === undefined || state !== TCP_LISTEN || inode === undefined || !inodes.has(inode)) continue;
      const [addrHex, portHex] = local.split(':');
      if (addrHex === undefined || portHex === undefined) continue;
      found.push({ host: hostOf(addrHex, v6), port: parseInt(portHex, 16) });
    }
  }
  return found;
}

/** The address to connect to for a listening address in /proc's hex (host byte order per 32-bit word). */
function hostOf(hex: string, v6: boolean): string {
  if (!v6) {
    const bytes = [6, 4, 2, 0].map((i) => parseInt(hex.slice(i, i + 2), 16));
    const ip = bytes.join('.');
    return ip === '0.0.0.0' ? '127.0.0.1' : ip;
  }
  if (/^0{32}$/.test(hex)) return '[::1]';
  if (hex === '00000000000000000000000001000000') return '[::1]';
  // ::ffff:a.b.c.d (an IPv4 address on a v6 socket)
  if (hex.startsWith('0000000000000000FFFF0000')) return hostOf(hex.slice(24), false);
  const words = [0, 8, 16, 24].map((i) => hex.slice(i, i + 8).match(/../g)?.reverse().join('') ?? '');
  const groups = words.flatMap((w) => [w.slice(0, 4), w.slice(4)]).map((g) => parseInt(g, 16).toString(16));
  return `[${groups.join(':')}]`;
}
