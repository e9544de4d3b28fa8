/**
 * A small tmpfs mounted for a test: a disk that fills up on demand. Used as a
 * capture's spill directory (HEAPCAP_SPILL_DIR) by the "disk full for the
 * spill" test and the fault matrix's `spill-full` cells. Mounting needs root
 * (the suite runs as root: scripts/test-deps.sh installs packages the same
 * way); without it `mountTmpfs` fails saying so.
 */
import { execFile } from 'node:child_process';
import { mkdir, readdir, rm, statfs } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const FILLER = 'heapcap-test-filler-';

export interface Tmpfs {
  path: string;
  /** Grow or shrink the filesystem (`mount -o remount,size=…`; no smaller than what it holds). */
  resize(sizeMb: number): Promise<void>;
  /**
   * Fill every free byte with filler files (fallocate: no bytes written, the pages taken at once). Whatever
   * writes to the filesystem at the same time may take some of the space first: the next filler takes the rest.
   */
  fill(): Promise<void>;
  /** Remove the filler files: the space is free again. */
  clear(): Promise<void>;
  /** Bytes in use (the fillers' included). */
  used(): Promise<number>;
  /** Names in the filesystem's root other than the fillers. */
  files(): Promise<string[]>;
  /** Unmount (lazily: a process still holding a file there does not keep it mounted); idempotent. */
  unmount(): Promise<void>;
}

/** Mount a `sizeMb` MiB tmpfs at `path` (created if missing). */
export async function mountTmpfs(path: string, sizeMb: number): Promise<Tmpfs> {
  await mkdir(path, { recursive: true });
  await run('mount', ['-t', 'tmpfs', '-o', `size=${sizeMb}m`, 'tmpfs', path]).catch((err: Error) => {
    throw new Error(`mounting a ${sizeMb} MiB tmpfs needs root: ${err.message}`);
  });
  let mounted = true;
  let fillers = 0;
  const free = async (): Promise<number> => {
    const s = await statfs(path);
    return s.bavail * s.bsize;
  };
  return {
    path,
    resize: async (mb) => void (await run('mount', ['-o', `remount,size=${mb}m`, path])),
    fill: async () => {
      for (let tries = 0; tries < 20; tries++) {
        const bytes = await free();
        if (bytes === 0) return;
        // A writer that took some of `bytes` meanwhile makes this one fail (ENOSPC): the loop measures again.
        await run('fallocate', ['-l', String(bytes), join(path, `${FILLER}${fillers++}`)]).catch(() => undefined);
      }
      throw new Error(`${path}: still ${await free()} bytes free after 20 fillers`);
    },
    clear: async () => {
      for (const name of await readdir(path)) if (name.startsWith(FILLER)) await rm(join(path, name), { force: true });
    },
    used: async () => {
      const s = await statfs(path);
      return (s.blocks - s.bfree) * s.bsize;
    },
    files: async () => (await readdir(path)).filter((name) => !name.startsWith(FILLER)),
    unmount: async () => {
      if (!mounted) return;
      mounted = false;
      await run('umount', ['-l', path]);
    },
  };
}
