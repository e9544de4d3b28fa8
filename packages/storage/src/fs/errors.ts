/**
 * Maps Node filesystem errors (errno codes) to `storage_failed` CaptureErrors
 * whose message names the path and errno and whose hint says what to check.
 * Matches on `err.code`, never on message text.
 */
import { CaptureError } from '@heapcap/errors';

/** What the file sink was doing, for the message: 'check', 'put', 'manifest', 'document', 'remove', 'read'. */
export type FsOp = 'check' | 'put' | 'manifest' | 'document' | 'remove' | 'read' | 'list';

const VERBS: Record<FsOp, string> = {
  check: 'cannot write a probe file to',
  put: 'cannot store the snapshot at',
  manifest: 'cannot write the manifest to',
  document: 'cannot write the document to',
  remove: 'cannot remove',
  read: 'cannot read',
  list: 'cannot list',
};

/** Node's errno code (`ENOSPC`, `EACCES`, …) when `err` carries one. */
export function errnoCode(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof err === 'object' && err !== null && typeof code === 'string' && /^E[A-Z0-9]+$/.test(code) ? code : undefined;
}

function hintFor(code: string | undefined, op: FsOp, root: string): string {
  if (op === 'read' && code === 'ENOENT') return 'no artifact at that path: check the key, or it was removed';
  switch (code) {
    case 'ENOSPC':
    case 'EDQUOT':
      return `free space on the volume holding ${root} (df -h), or point HEAPCAP_STORAGE at a larger volume; a gzipped snapshot takes about 1/7 of the snapshot JSON`;
    case 'EACCES':
    case 'EPERM':
      return `make ${root} writable by this process (uid ${process.getuid?.() ?? '?'}), or point HEAPCAP_STORAGE elsewhere`;
    case 'EROFS':
      return `${root} is on a read-only filesystem; mount a writable volume there or point HEAPCAP_STORAGE elsewhere`;
    case 'ENOENT':
    case 'ENOTDIR':
    case 'EEXIST':
      return `check that ${root} and every parent of it is a directory (HEAPCAP_STORAGE=file://DIR), not a file`;
    case 'EMFILE':
    case 'ENFILE':
      return 'the process ran out of file descriptors; raise the limit (ulimit -n) or lower HEAPCAP_WORKER_CONCURRENCY';
    case 'EIO':
      return `the device holding ${root} reported an I/O error; check the kernel log (dmesg) and the disk`;
    default:
      return `check the filesystem holding ${root} (HEAPCAP_STORAGE)`;
  }
}

/** A `storage_failed` error for a filesystem failure at `path` under the sink root `root`. */
export function fsStorageError(err: unknown, op: FsOp, path: string, root: string): CaptureError {
  if (err instanceof CaptureError) return err;
  const code = errnoCode(err);
  const what = err instanceof Error ? err.message : String(err);
  return new CaptureError('storage_failed', `${VERBS[op]} ${path}: ${code ?? what}${code === undefined ? '' : ` (${what})`}`, {
    hint: hintFor(code, op, root),
    details: { op, path, errno: code },
    cause: err,
  });
}
