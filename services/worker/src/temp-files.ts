/**
 * Scratch files of the worker's follow-up jobs (an analysis's downloaded
 * snapshot, a leak hunt's three snapshots) carry the host name and pid of the
 * process that made them, so that the next worker on the same host can remove
 * what a killed one left behind: a SIGKILL or an OOM kill skips every
 * `finally`, and a hunt's directory holds three whole snapshots.
 */
import { readdir, rm } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';

/** Only names this host's processes made: another pid namespace's pids mean nothing here. */
const HOST = hostname().replace(/[^A-Za-z0-9]/g, '_').slice(0, 40);
const OWNED = /^heapcap-(?:hunt|analysis)-.+-h([A-Za-z0-9_]+)-p(\d+)-/;

/** The start of a scratch name of this process: `heapcap-<kind>-<id>-h<host>-p<pid>-`. */
export function scratchPrefix(kind: 'hunt' | 'analysis', id: string): string {
  return `heapcap-${kind}-${id}-h${HOST}-p${process.pid}-`;
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

/** Removes the scratch files and directories in `dir` that a process of this host, no longer running, left. */
export async function sweepOrphanScratch(dir: string): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const name of names) {
    const m = OWNED.exec(name);
    if (m === null || m[1] !== HOST) continue;
    const pid = Number(m[2]);
    if (pid === process.pid || alive(pid)) continue;
    await rm(join(dir, name), { recursive: true, force: true }).catch(() => undefined);
    removed.push(name);
  }
  return removed;
}
