/**
 * The local pipe transport: for a Node.js target whose filesystem heapcap
 * shares (the same host, or a pod volume both mount at the same path), the
 * target writes its snapshot with its own `v8.writeHeapSnapshot()` into a
 * FIFO that heapcap reads, instead of streaming it as CDP messages.
 *
 * Why: over CDP the target escapes every chunk into a JSON message and its
 * inspector copies it again; that costs the target 0.5-1 s more main-thread
 * CPU per 525 MB than writing the file itself, and its pause is what the
 * service exists to keep short. Through the FIFO the pause is the target's own
 * `writeHeapSnapshot()`, minus the disk: a thread of heapcap's drains the
 * pipe at memory speed (openFifoReader) into the same bounded buffer that
 * spills to disk, so the target never waits on heapcap's hashing, summary,
 * gzip or upload.
 *
 * Safe by construction: the FIFO sits in a fresh directory only the target's
 * user and root can enter (0700), it is used only after the target proved it
 * sees that very directory (same device and inode), and any failure before the
 * first byte falls back to CDP.
 */
import { execFile } from 'node:child_process';
import { constants, openSync, closeSync } from 'node:fs';
import { chown, mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { Worker, type WorkerOptions } from 'node:worker_threads';
import { CaptureError } from './errors.ts';
import type { CdpSession } from './session.ts';
import type { RuntimeFacts } from './runtime.ts';
import type { SnapshotFlags } from './types.ts';
import type { ReaderCommand, ReaderData, ReaderMessage } from './fifo-reader-thread.ts';
import { ownerTag, sweepDeadOwners } from './owned-scratch.ts';

/** How the snapshot bytes travel: CDP messages, the local FIFO, or FIFO when possible (else CDP). */
export type SnapshotTransport = 'cdp' | 'pipe' | 'auto';

/** What the capture used, and why. */
export interface TransportReport {
  requested: SnapshotTransport;
  used: 'cdp' | 'pipe';
  reason: string;
}

/** A FIFO the target can write and heapcap reads. */
export interface PipeSetup {
  dir: string;
  path: string;
}

const run = promisify(execFile);

/** The read buffer: a Linux FIFO holds 64 KiB, so no read returns more. */
const PIPE_READ_BYTES = 64 * 1024;

/**
 * Evaluated in the target: who it runs as and what it sees at `dir`. One
 * expression, no globals, no regular expressions (they would leave our strings
 * in its RegExp statics); `require` comes from the command-line API where
 * `process.getBuiltinModule` is missing (Node < 20.16 / 22.3).
 */
const seeDirExpression = (dir: string): string => `((dir) => {
  const load = typeof process.getBuiltinModule === 'function' ? (n) => process.getBuiltinModule(n) : (typeof require === 'function' ? require : null);
  if (load === null) return { ok: false, why: 'the target cannot load node:fs' };
  try {
    const st = load('fs').statSync(dir, { bigint: true });
    return { ok: true, uid: typeof process.getuid === 'function' ? process.getuid() : null, dev: String(st.dev), ino: String(st.ino) };
  } catch (e) { return { ok: false, why: String(e && e.code || e) }; }
})(${JSON.stringify(dir)})`;

/** Evaluated in the target: write the snapshot into `path` (the FIFO). */
const writeExpression = (path: string, flags: SnapshotFlags): string => {
  const options = { ...(flags.exposeInternals === true ? { exposeInternals: true } : {}), ...(flags.captureNumericValue === true ? { exposeNumericValues: true } : {}) };
  return `((path, options) => {
  const load = typeof process.getBuiltinModule === 'function' ? (n) => process.getBuiltinModule(n) : (typeof require === 'function' ? require : null);
  if (load === null) return { ok: false, why: 'the target cannot load node:v8' };
  load('v8').writeHeapSnapshot(path, options);
  return { ok: true };
})(${JSON.stringify(path)}, ${JSON.stringify(options)})`;
};

/** Evaluate `expression` in the target and return its JSON value. */
async function evaluate<T>(session: CdpSession, expression: string, timeoutMs: number | undefined): Promise<T> {
  const res = await session.send('Runtime.evaluate', { expression, returnByValue: true, silent: true, includeCommandLineAPI: true }, timeoutMs);
  if (res.exceptionDetails !== undefined) {
    throw new CaptureError('protocol_error', `the target failed: ${res.exceptionDetails.exception?.description ?? res.exceptionDetails.text}`);
  }
  return res.result.value as T;
}

/**
 * Set up the FIFO when this target can use it; otherwise say why not (the
 * caller then uses CDP, or fails when `pipe` was required).
 */
export async function preparePipe(session: CdpSession, facts: RuntimeFacts, baseDir: string = tmpdir()): Promise<PipeSetup | { skip: string }> {
  if (facts.product !== 'node') return { skip: 'the pipe needs a Node.js target (browsers have no writeHeapSnapshot)' };
  let dir: string | undefined;
  try {
    // Named after this process: a restart sweeps what a killed one left (sweepOrphanPipes).
    dir = await mkdtemp(join(baseDir, `heapcap-pipe-${ownerTag()}-`));
    const ours = await stat(dir, { bigint: true });
    const seen = await evaluate<{ ok: boolean; why?: string; uid?: number | null; dev?: string; ino?: string }>(session, seeDirExpression(dir), undefined);
    // Not there at all, or another directory at the same path: not the same filesystem.
    if ((!seen.ok && seen.why === 'ENOENT') || (seen.ok && (seen.dev !== String(ours.dev) || seen.ino !== String(ours.ino)))) {
      return await skip(dir, `the target does not share ${baseDir} with heapcap (another host, container or mount namespace; set HEAPCAP_PIPE_DIR to a directory both see)`);
    }
    if (!seen.ok) return await skip(dir, `the target cannot see ${baseDir}: ${seen.why ?? 'unknown'}`);
    const path = join(dir, 'snapshot.fifo');
    await run('mkfifo', ['-m', '600', path]);
    const me = typeof process.getuid === 'function' ? process.getuid() : undefined;
    if (seen.uid !== null && seen.uid !== undefined && seen.uid !== me) {
      // Only root may hand the FIFO to the target's user; anyone else falls back to CDP.
      if (me !== 0) return await skip(dir, `the target runs as uid ${seen.uid}, heapcap as uid ${me ?? '?'}`);
      await chown(dir, seen.uid, -1);
      await chown(path, seen.uid, -1);
    }
    return { dir, path };
  } catch (err) {
    // The target itself failing (gone, frozen) is the capture's error, not a reason to try CDP.
    if (err instanceof CaptureError && (err.code === 'target_closed' || err.code === 'protocol_timeout' || err.code === 'cancelled')) {
      await skip(dir, '');
      throw err;
    }
    return skip(dir, `the pipe could not be set up: ${(err as Error).message}`);
  }
}

async function skip(dir: string | undefined, why: string): Promise<{ skip: string }> {
  if (dir !== undefined) await rm(dir, { recursive: true, force: true }).catch(() => undefined);
  return { skip: why };
}

/** `heapcap-pipe-h<host>-p<pid>-XXXXXX`, as preparePipe names them. */
const OWNED_PIPE_DIR = /^heapcap-pipe-h([A-Za-z0-9_]+)-p(\d+)-/;

/**
 * Removes the FIFO directories in `baseDir` (default the system temp dir, as
 * preparePipe) that processes of this host, no longer running, left: a
 * capturing process killed with SIGKILL never reaches removePipe. Returns the
 * names removed; never throws.
 */
export function sweepOrphanPipes(baseDir: string = tmpdir()): Promise<string[]> {
  return sweepDeadOwners(baseDir, OWNED_PIPE_DIR);
}

/** Remove the FIFO and its directory (idempotent, never throws). */
export async function removePipe(pipe: PipeSetup): Promise<void> {
  await rm(pipe.dir, { recursive: true, force: true }).catch(() => undefined);
}

/**
 * Read the FIFO while the target writes its snapshot into it. `onBytes` sees
 * every read in order; the buffer is reused for the next read, so it must copy
 * what it keeps. Resolves once the target's call returned and every
 * byte was read; rejects with the target's error or the transport's.
 *
 * The read end is opened non-blocking and read through libuv's pipe handle
 * (epoll, no thread pool); a second, write end of our own keeps the FIFO from
 * reporting end-of-file before the target has opened it, and is closed as soon
 * as the target's first bytes arrive (or its call returns).
 */
export async function readPipeSnapshot(
  session: CdpSession,
  pipe: PipeSetup,
  flags: SnapshotFlags,
  snapshotMs: number,
  onBytes: (chunk: Buffer) => void,
): Promise<{ bytes: number }> {
  const fifo = openFifoReader(pipe.path, onBytes);
  try {
    let written: { ok: boolean; why?: string };
    try {
      written = await evaluate<{ ok: boolean; why?: string }>(session, writeExpression(pipe.path, flags), snapshotMs);
    } catch (err) {
      // Say what the target was doing: the evaluate is its writeHeapSnapshot().
      if (err instanceof CaptureError && err.code === 'protocol_timeout') {
        throw new CaptureError('protocol_timeout', `the target's writeHeapSnapshot() (pipe transport) got no answer within ${snapshotMs} ms`, { hint: err.hint, cause: err });
      }
      throw err;
    }
    fifo.release();
    if (!written.ok) throw new CaptureError('protocol_error', `the target could not write its snapshot: ${written.why ?? 'unknown'}`);
    await fifo.ended;
    return { bytes: fifo.bytes };
  } finally {
    fifo.close();
  }
}

/** The read side of the FIFO, open before the writer comes. */
export interface FifoReader {
  /** Resolves at end-of-file after the writer closed it (and `release` was called or bytes came); rejects on a read error. */
  readonly ended: Promise<void>;
  /** Bytes handed to `onBytes` so far. */
  readonly bytes: number;
  /** How often the reading thread stopped because every block was still with this thread (the writer then waited). */
  readonly stalls: number;
  /** Drop our own write end (done by the first bytes too): end-of-file can come now. */
  release(): void;
  /** Stop reading and close everything (idempotent). */
  close(): void;
}

/** Blocks the reading thread fills and hands over; 4 × 1 MiB ≈ 40 ms of a Node 22 target's output. */
const READER_BLOCK_BYTES = 1024 * 1024;
const READER_BLOCKS = 4;

declare const HEAPCAP_BUNDLED: boolean | undefined;

/**
 * Starts the reading thread (fifo-reader-thread.ts). In the bundle
 * (scripts/build.mjs defines HEAPCAP_BUNDLED) it is dist/fifo-reader-thread.mjs,
 * beside every chunk. From the TypeScript sources (tests, benches) a worker
 * does not inherit tsx's loader on Node 20, so the thread loads tsx's require
 * hook itself and then the module.
 */
function startReaderThread(data: ReaderData, options: Omit<WorkerOptions, 'eval' | 'workerData'>): Worker {
  if (typeof HEAPCAP_BUNDLED !== 'undefined' && HEAPCAP_BUNDLED) return new Worker(new URL('./fifo-reader-thread.mjs', import.meta.url), { ...options, workerData: data });
  const file = fileURLToPath(new URL('./fifo-reader-thread.ts', import.meta.url));
  const tsx = fileURLToPath(import.meta.resolve('tsx/cjs/api'));
  return new Worker(`require(${JSON.stringify(tsx)}).require(${JSON.stringify(file)}, ${JSON.stringify(file)});`, { ...options, eval: true, workerData: data });
}

/**
 * Opens the FIFO at `path` for reading and feeds every byte, in order, to
 * `onBytes` on this thread; a reading thread keeps the FIFO drained meanwhile
 * (fifo-reader-thread.ts). `onBytes` must copy what it keeps: its Buffer goes back
 * to the reading thread when it returns.
 */
export function openFifoReader(path: string, onBytes: (chunk: Buffer) => void, options: { blocks?: number } = {}): FifoReader {
  const stats = new Int32Array(new SharedArrayBuffer(4));
  const readFd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  let holdFd: number | undefined;
  let worker: Worker;
  try {
    holdFd = openSync(path, constants.O_WRONLY | constants.O_NONBLOCK);
    // From here the reading thread owns readFd: its pipe handle closes it.
    worker = startReaderThread({ fd: readFd, blockBytes: READER_BLOCK_BYTES, blocks: Math.max(2, options.blocks ?? READER_BLOCKS), readBytes: PIPE_READ_BYTES, stats }, {
      // It allocates its blocks once and little else.
      resourceLimits: { maxYoungGenerationSizeMb: 1, maxOldGenerationSizeMb: 16 },
      stdout: false,
      stderr: false,
    });
  } catch (err) {
    if (holdFd !== undefined) closeSync(holdFd);
    closeSync(readFd);
    throw err;
  }
  const release = (): void => {
    if (holdFd === undefined) return;
    closeSync(holdFd);
    holdFd = undefined;
  };
  let bytes = 0;
  let settled = false;
  let settle: (err?: Error) => void = () => undefined;
  const ended = new Promise<void>((resolve, reject) => {
    settle = (err) => {
      if (settled) return;
      settled = true;
      if (err === undefined) resolve();
      else reject(err);
    };
  });
  // Observed at once: a transport error must not surface as an unhandled rejection while the target writes.
  ended.catch(() => undefined);
  let closed = false;
  const command = (m: ReaderCommand, transfer: ArrayBuffer[] = []): void => worker.postMessage(m, transfer);
  worker.on('message', (m: ReaderMessage) => {
    if (closed) return;
    if (m.kind === 'bytes') {
      release();
      bytes += m.length;
      try {
        onBytes(Buffer.from(m.block, 0, m.length));
      } catch (err) {
        settle(err instanceof Error ? err : new Error(String(err)));
        return;
      }
      command({ kind: 'block', block: m.block }, [m.block]);
    } else if (m.kind === 'end') {
      settle();
    } else {
      settle(Object.assign(new Error(`reading the snapshot FIFO failed: ${m.message}`), { code: m.code }));
    }
  });
  worker.on('error', (err) => settle(err));
  worker.on('exit', () => settle(new Error('the FIFO reading thread exited before the end of the snapshot')));
  return {
    ended,
    get bytes() {
      return bytes;
    },
    get stalls() {
      return Atomics.load(stats, 0);
    },
    release,
    close(): void {
      release();
      if (closed) return;
      closed = true;
      settle(new Error('the FIFO reader was closed'));
      // Its pipe handle closes the read end; terminate() is the backstop for a thread that does not stop.
      command({ kind: 'stop' });
      const backstop = setTimeout(() => void worker.terminate(), 1_000);
      backstop.unref();
      worker.once('exit', () => clearTimeout(backstop));
      worker.unref();
    },
  };
}
