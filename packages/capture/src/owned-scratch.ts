/**
 * Scratch made by one process and named after it (host and pid), so the next
 * process on the same host can remove what a killed one left: a SIGKILL or an
 * OOM kill skips every `finally`. Used for the pipe transport's FIFO
 * directories and the worker's follow-up scratch (analysis and leak-hunt
 * snapshots).
 */
import { readdir, rm } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';

/** This host, as it appears in names: only this host's pids mean something here (another pid namespace's do not). */
const HOST = hostname().replace(/[^A-Za-z0-9]/g, '_').slice(0, 40);

/** `h<host>-p<pid>`: the owner part of a scratch name made by this process. */
export function ownerTag(): string {
  return `h${HOST}-p${process.pid}`;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists, as another user.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Removes the entries of `dir` whose name `owned` matches (its first group the
 * host, the second the pid, as ownerTag writes them) and whose process, of
 * this host, is gone. Returns the names removed; never throws.
 */
export async function sweepDeadOwners(dir: string, owned: RegExp): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const name of names) {
    const m = owned.exec(name);
    if (m === null || m[1] !== HOST) continue;
    const pid = Number(m[2]);
    if (pid === process.pid || alive(pid)) continue;
    await rm(join(dir, name), { recursive: true, force: true }).catch(() => undefined);
    removed.push(name);
  }
  return removed;
}
