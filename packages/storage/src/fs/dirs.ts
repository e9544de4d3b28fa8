/**
 * Directories of the filesystem sink: created on demand for a write, removed
 * again when a failed write (or a remove) leaves them empty, so a failed
 * capture leaves no empty `<target>/YYYY/MM/DD` behind.
 *
 * Race with a concurrent capture writing into the same directory: `rmdir`
 * only removes an empty directory (a temp file in it keeps it), and a writer
 * whose directory was pruned between its `mkdir` and its `open` (ENOENT)
 * creates it again and retries.
 */
import { mkdir, open, rmdir, stat, type FileHandle } from 'node:fs/promises';
import { dirname, relative, resolve, sep } from 'node:path';
import { errnoCode } from './errors.ts';

/** Heap snapshots hold whatever the target held (tokens, personal data): owner-only. */
export const DIR_MODE = 0o700;

/** Tries for a file whose directory a concurrent prune keeps removing; one retry is the most needed. */
const OPEN_ATTEMPTS = 5;

/** Records the topmost directory a write created, so a failed write can remove what it made. */
export class CreatedDirs {
  #top: string | undefined;

  /** The topmost directory created so far, if any. */
  get top(): string | undefined {
    return this.#top;
  }

  note(created: string | undefined): void {
    // The shortest path is the topmost directory.
    if (created !== undefined && (this.#top === undefined || created.length < this.#top.length)) this.#top = created;
  }

  /** Removes the directories this write created under `leaf`, while they are empty; never throws. */
  async prune(leaf: string): Promise<void> {
    if (this.#top !== undefined) await pruneEmptyDirs(leaf, this.#top);
  }
}

/**
 * `mkdir -p dir` with one system call per directory, so it always ends:
 * Node's `mkdir(…, { recursive: true })` never returned under /proc (procfs
 * answers ENOENT to every mkdir; Node then creates the parent, which exists,
 * and tries again: `heapcap capture --out /proc/nope` spun at 100 % CPU until
 * SIGKILL). Walks up to the first directory that exists, then creates the
 * missing ones downwards; an error of any of them is thrown as is. Resolves
 * with the topmost directory it created (like Node's), if any.
 */
export async function mkdirp(dir: string, mode = DIR_MODE): Promise<string | undefined> {
  const missing: string[] = [];
  for (let at = resolve(dir); ; at = dirname(at)) {
    try {
      await stat(at);
      break;
    } catch (err) {
      if (errnoCode(err) !== 'ENOENT' || dirname(at) === at) throw err;
      missing.push(at);
    }
  }
  let top: string | undefined;
  for (const d of missing.reverse()) {
    try {
      await mkdir(d, { mode });
      top ??= d;
    } catch (err) {
      // Made meanwhile by a concurrent writer: fine (if it is no directory, the next step says so).
      if (errnoCode(err) !== 'EEXIST') throw err;
    }
  }
  return top;
}

/**
 * Create `file` in `dir` ('wx'), making `dir` (`mkdir -p`) when it is missing; retried when a concurrent prune
 * removed the directory in between. The directory usually exists (a target's day directory gets every capture of
 * the day), so the open comes first: a `stat` per directory level for every file written was most of the sink's
 * system calls.
 */
export async function openInDir(dir: string, file: string, mode: number, created: CreatedDirs): Promise<FileHandle> {
  try {
    return await open(file, 'wx', mode);
  } catch (err) {
    if (errnoCode(err) !== 'ENOENT') throw err;
  }
  for (let attempt = 1; ; attempt++) {
    try {
      created.note(await mkdirp(dir));
      return await open(file, 'wx', mode);
    } catch (err) {
      if (errnoCode(err) !== 'ENOENT' || attempt >= OPEN_ATTEMPTS) throw err;
    }
  }
}

/**
 * Removes `from` and its parents while they are empty, up to and including
 * `upTo` (which must contain `from`). Stops at the first directory that is not
 * empty; never throws (a leftover empty directory is untidy, not an error).
 */
export async function pruneEmptyDirs(from: string, upTo: string): Promise<void> {
  const rel = relative(upTo, from);
  if (rel.startsWith('..') || rel.split(sep).includes('..')) return;
  for (let dir = from; ; dir = dirname(dir)) {
    try {
      await rmdir(dir);
    } catch (err) {
      // ENOENT: someone else removed it already; its parent may still be empty.
      if (errnoCode(err) !== 'ENOENT') return;
    }
    if (dir === upTo || dirname(dir) === dir) return;
  }
}
