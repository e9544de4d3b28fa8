/**
 * Scratch files of the worker's follow-up jobs (an analysis's downloaded
 * snapshot, a leak hunt's three snapshots) carry the host name and pid of the
 * process that made them, so that the next worker on the same host can remove
 * what a killed one left behind: a SIGKILL or an OOM kill skips every
 * `finally`, and a hunt's directory holds three whole snapshots.
 */
import { ownerTag, sweepDeadOwners } from '@heapcap/capture';

const OWNED = /^heapcap-(?:hunt|analysis)-.+-h([A-Za-z0-9_]+)-p(\d+)-/;

/** The start of a scratch name of this process: `heapcap-<kind>-<id>-h<host>-p<pid>-`. */
export function scratchPrefix(kind: 'hunt' | 'analysis', id: string): string {
  return `heapcap-${kind}-${id}-${ownerTag()}-`;
}

/** Removes the scratch files and directories in `dir` that a process of this host, no longer running, left. */
export function sweepOrphanScratch(dir: string): Promise<string[]> {
  return sweepDeadOwners(dir, OWNED);
}
