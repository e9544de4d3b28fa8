/**
 * The filesystem artifact sink: snapshot → sha256/header → gzip → a dot-prefixed
 * temp file in the final directory → fsync → rename. The rename is atomic within
 * a directory, so a reader either sees the complete snapshot under its key or
 * nothing; a failed put removes its temp file.
 */
import { randomBytes } from 'node:crypto';
import { open, readdir, readFile, rename, stat, unlink, type FileHandle } from 'node:fs/promises';
import { basename, dirname, join, resolve, sep } from 'node:path';
import type { Readable, Stream } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { CaptureError } from '@heapcap/errors';
import { SnapshotDigest } from '../digest.ts';
import { CreatedDirs, mkdirp, openInDir, pruneEmptyDirs } from './dirs.ts';
import { errnoCode, fsStorageError, type FsOp } from './errors.ts';
import { createSnapshotGzip } from '../gzip.ts';
import { FileWriter } from './file-writer.ts';
import { ID_PATTERN } from '@heapcap/config';
import { captureObjectKeys, documentKey, locationOfKey, locationOfRef, MANIFEST_SUFFIX, manifestKey, snapshotKey, SNAPSHOT_CONTENT_TYPE, type CaptureLocation, type DocumentKind } from '../keys.ts';
import { documentBody, parseDocument } from '../document.ts';
import { validManifest } from '../manifest.ts';
import { openFileArtifact } from './read.ts';
import type { ArtifactManifest } from '../manifest.ts';
import type { ArtifactRef, ArtifactStore, ListedManifest, OpenOptions, PutOptions, RemoveTarget, StoredArtifact, StoredObject } from '../types.ts';

/** Options for {@link createFileSink}. */
export interface FileSinkOptions {
  /** Root directory; created (mkdir -p) on check and put. */
  dir: string;
}

// Heap snapshots hold whatever the target held (tokens, personal data): owner-only.
const FILE_MODE = 0o600;
/** How long the storage check may take (a local disk answers in milliseconds). */
const CHECK_DEADLINE_MS = 15_000;

function tempSuffix(): string {
  return randomBytes(6).toString('hex');
}

function cancelled(signal: AbortSignal | undefined, cause?: unknown): CaptureError {
  const reason: unknown = signal?.reason ?? cause;
  const why = reason instanceof Error ? reason.message : typeof reason === 'string' ? reason : 'cancelled by the caller';
  return new CaptureError('cancelled', `the capture was cancelled (${why})`, { cause: reason });
}

function isAbortError(err: unknown): boolean {
  return err instanceof Error && err.name === 'AbortError';
}

/** Removes a file, treating "already gone" as success. */
async function unlinkIfPresent(path: string): Promise<void> {
  try {
    await unlink(path);
  } catch (err) {
    if (errnoCode(err) !== 'ENOENT') throw err;
  }
}

/** fsync a directory so a rename in it survives a crash (the rename itself is only in the page cache). */
async function syncDir(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Destroys the writer and waits until its write in flight (if any) has returned. */
function stopWriter(writer: FileWriter): Promise<void> {
  if (writer.closed) return Promise.resolve();
  return new Promise((resolve) => {
    writer.once('close', () => resolve());
    writer.destroy();
  });
}

interface FirstFailure {
  /** The stage that emitted 'error' first, if any. */
  readonly first: Stream | undefined;
  detach(): void;
}

/**
 * Records which pipeline stage failed first. pipeline() destroys every stage
 * with the first error, so the error object alone cannot tell a failing source
 * (the engine's problem) from a failing disk (ours).
 */
function watchFirstFailure(stages: Stream[]): FirstFailure {
  let first: Stream | undefined;
  const listeners = stages.map((stage) => {
    const onError = (): void => {
      first ??= stage;
    };
    stage.on('error', onError);
    return () => stage.off('error', onError);
  });
  return {
    get first() {
      return first;
    },
    detach: () => {
      for (const off of listeners) off();
    },
  };
}

/** An ArtifactStore on a local directory (kind 'file'). */
export class FileSink implements ArtifactStore {
  readonly kind = 'file' as const;
  /** A directory has no URLs to hand out: artifacts are streamed by the API. */
  readonly canPresign = false;
  /** Absolute path of the root directory. */
  readonly root: string;

  constructor(options: FileSinkOptions) {
    this.root = resolve(options.dir);
  }

  /**
   * Creates the root (mkdir -p), then writes, fsyncs and deletes a probe file
   * in it, within CHECK_DEADLINE_MS and `signal`: a directory that never
   * answers (a hung network mount) fails the check instead of holding the
   * capture (or a Ctrl-C) for ever.
   */
  async check(signal?: AbortSignal): Promise<void> {
    if (signal?.aborted === true) throw cancelled(signal);
    const work = this.#check();
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const stop = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new CaptureError('storage_unavailable', `the storage check of ${this.root} did not finish within ${CHECK_DEADLINE_MS / 1000} s`, {
              hint: 'the directory does not answer (a hung network mount?); check it, or choose another --out',
              details: { op: 'check', path: this.root, deadlineMs: CHECK_DEADLINE_MS },
            }),
          ),
        CHECK_DEADLINE_MS,
      );
      onAbort = () => reject(cancelled(signal!));
      signal?.addEventListener('abort', onAbort, { once: true });
    });
    // A late failure of the abandoned work is not anyone's any more.
    work.catch(() => {});
    try {
      await Promise.race([work, stop]);
    } finally {
      clearTimeout(timer);
      if (onAbort !== undefined) signal?.removeEventListener('abort', onAbort);
    }
  }

  async #check(): Promise<void> {
    const probe = join(this.root, `.heapcap-probe.${tempSuffix()}.tmp`);
    let at = this.root;
    let created = false;
    try {
      await mkdirp(this.root);
      at = probe;
      const handle = await open(probe, 'wx', FILE_MODE);
      created = true;
      try {
        await handle.writeFile('heapcap storage check\n');
        await handle.sync();
      } finally {
        await handle.close();
      }
      await unlink(probe);
      created = false;
    } catch (err) {
      if (created) await unlinkIfPresent(probe).catch(() => {});
      throw fsStorageError(err, 'check', at, this.root);
    }
  }

  /** Streams the snapshot to `<root>/<target>/<yyyy>/<mm>/<dd>/<capture>.heapsnapshot[.gz]`, all or nothing. */
  async put(ref: ArtifactRef, source: Readable, options: PutOptions = {}): Promise<StoredArtifact> {
    const { signal } = options;
    const key = snapshotKey(ref);
    let final: string;
    try {
      final = this.#path(ref, key);
    } catch (err) {
      source.destroy();
      throw err;
    }
    if (signal?.aborted === true) {
      source.destroy();
      throw cancelled(signal);
    }
    const dir = dirname(final);
    // Dot-prefixed and in the final directory: hidden from listings, and the rename never crosses filesystems.
    const tmp = join(dir, `.${ref.captureId}.${tempSuffix()}.tmp`);
    const digest = new SnapshotDigest();
    const created = new CreatedDirs();
    let watch: FirstFailure | undefined;
    let handle: FileHandle | undefined;
    let out: FileWriter | undefined;
    let leftover: string | undefined;
    try {
      handle = await openInDir(dir, tmp, FILE_MODE, created);
      leftover = tmp;
      // The last stage to read the snapshot's bytes gives the producer's chunks back (options.release).
      out = new FileWriter(handle, ref.gzip ? undefined : options.release);
      const stages = ref.gzip ? [source, digest, createSnapshotGzip(options.release), out] : [source, digest, out];
      watch = watchFirstFailure(stages);
      await pipeline(stages, signal === undefined ? {} : { signal });
      await handle.sync();
      const bytesStored = out.bytesWritten;
      // Some filesystems report write errors only on close.
      const closing = handle;
      handle = undefined;
      await closing.close();
      await rename(tmp, final);
      leftover = final;
      await syncDir(dir);
      leftover = undefined;
      return {
        key,
        location: final,
        bytesUncompressed: digest.bytes,
        bytesStored,
        sha256: digest.sha256,
        gzip: ref.gzip,
        contentType: SNAPSHOT_CONTENT_TYPE,
        header: digest.header,
      };
    } catch (err) {
      if (!source.destroyed) source.destroy();
      // The writer's write in flight returns before the fd closes, so the unlink below is the last word.
      if (out !== undefined) await stopWriter(out);
      if (handle !== undefined) await handle.close().catch(() => {});
      if (leftover !== undefined) await unlinkIfPresent(leftover).catch(() => {});
      await created.prune(dir);
      throw this.#putError(err, watch?.first === source, signal, final);
    } finally {
      watch?.detach();
    }
  }

  /** Writes `<capture>.manifest.json` (pretty JSON) beside the snapshot through tmp + rename; returns its key and path. */
  async putManifest(ref: ArtifactRef, manifest: ArtifactManifest): Promise<StoredObject> {
    const key = manifestKey(ref);
    const final = this.#path(ref, key);
    await this.#writeAtomic(final, validManifest(ref, manifest), 'manifest');
    return { key, location: final };
  }

  /** Writes `<capture>.<kind>.json` beside the snapshot through tmp + fsync + rename; returns its key and path. */
  async putDocument(target: RemoveTarget, kind: DocumentKind, document: unknown): Promise<StoredObject> {
    const loc: CaptureLocation = 'key' in target ? locationOfKey(target.key) : locationOfRef(target);
    const key = documentKey(loc, kind);
    const final = 'key' in target ? this.#keyPath(key) : this.#path(target, key);
    await this.#writeAtomic(final, documentBody(document), 'document');
    return { key, location: final };
  }

  /** Reads `<capture>.<kind>.json` back; null when the file is not there. */
  async getDocument(key: string): Promise<unknown> {
    const path = this.#keyPath(key);
    let text: string;
    try {
      text = await readFile(path, 'utf8');
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') return null;
      throw fsStorageError(err, 'read', path, this.root);
    }
    return parseDocument(key, text);
  }

  /**
   * Deletes the manifest (first: its presence means "complete"), the summary,
   * the snapshot (.gz and plain) and temp files a crashed put left, then the
   * `<target>/YYYY/MM/DD` directories left empty. Missing files are fine; every
   * deletion is attempted, and the first failure is thrown.
   */
  async remove(target: RemoveTarget): Promise<void> {
    const loc: CaptureLocation = 'key' in target ? locationOfKey(target.key) : locationOfRef(target);
    if (!('key' in target)) this.#path(target, manifestKey(target));
    const dir = this.#keyPath(loc.dir);
    const id = loc.captureId;
    const paths = captureObjectKeys(loc).map((key) => this.#keyPath(key));
    try {
      for (const name of await readdir(dir)) {
        if (name.startsWith(`.${id}.`) && name.endsWith('.tmp')) paths.push(join(dir, name));
      }
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') return;
      throw fsStorageError(err, 'remove', dir, this.root);
    }
    let first: CaptureError | undefined;
    for (const path of paths) {
      try {
        await unlinkIfPresent(path);
      } catch (err) {
        first ??= fsStorageError(err, 'remove', path, this.root);
      }
    }
    if (first !== undefined) throw first;
    // Up to the target's own directory: `<root>/<targetId>` is the first segment of every key.
    await pruneEmptyDirs(dir, this.#keyPath(loc.dir.split('/')[0] ?? ''));
  }

  /** Every `*.manifest.json` under the root (temp files start with a dot and are skipped). */
  async *listManifests(signal?: AbortSignal): AsyncIterable<ListedManifest> {
    let names: string[];
    try {
      names = await readdir(this.root, { recursive: true });
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') return;
      throw fsStorageError(err, 'list', this.root, this.root);
    }
    for (const name of names) {
      signal?.throwIfAborted();
      if (!name.endsWith(MANIFEST_SUFFIX) || basename(name).startsWith('.')) continue;
      const key = name.split(sep).join('/');
      try {
        yield { key, modified: (await stat(join(this.root, name))).mtime };
      } catch (err) {
        // Deleted between the listing and the stat: not there any more.
        if (errnoCode(err) !== 'ENOENT') throw fsStorageError(err, 'list', join(this.root, name), this.root);
      }
    }
  }

  /** Streams an artifact by its key relative to the root; gunzips on the fly when asked and stored gzipped. */
  async open(key: string, options: OpenOptions = {}): Promise<Readable> {
    return openFileArtifact(this.#keyPath(key), options);
  }

  /** A directory cannot sign URLs: rejects with `invalid_input` (check `canPresign` first). */
  presign(key: string): Promise<string> {
    return Promise.reject(new CaptureError('invalid_input', `file storage cannot presign ${JSON.stringify(key)}: stream it through the API instead`));
  }

  /** Nothing to release: every file handle is closed when its operation ends. */
  async close(): Promise<void> {}

  /** Absolute path of a key relative to the root; refuses keys that climb out of it. */
  #keyPath(key: string): string {
    const parts = key.replace(/^\/+/, '').split('/');
    if (key === '' || parts.some((p) => p === '' || p === '.' || p === '..')) {
      throw new CaptureError('invalid_input', `not an artifact key: ${JSON.stringify(key)}`);
    }
    return join(this.root, ...parts);
  }

  /** Absolute path of `key`, after checking the ids are safe path segments. */
  #path(ref: ArtifactRef, key: string): string {
    for (const [name, value] of [
      ['captureId', ref.captureId],
      ['targetId', ref.targetId],
    ] as const) {
      if (!ID_PATTERN.test(value)) {
        throw new CaptureError('invalid_input', `${name} ${JSON.stringify(value)} is not a safe path segment`);
      }
    }
    if (!Number.isFinite(ref.startedAt.getTime())) throw new CaptureError('invalid_input', 'startedAt is not a valid date');
    const path = join(this.root, ...key.split('/'));
    if (!path.startsWith(this.root + sep)) throw new CaptureError('invalid_input', `key ${key} escapes ${this.root}`);
    return path;
  }

  /** The CaptureError a failed put rejects with. */
  #putError(err: unknown, fromSource: boolean, signal: AbortSignal | undefined, final: string): CaptureError {
    // The engine's own errors (target_closed, snapshot_truncated, …) keep their code.
    if (err instanceof CaptureError) return err;
    if (signal?.aborted === true || isAbortError(err)) return cancelled(signal, err);
    if (fromSource) {
      const message = err instanceof Error ? err.message : String(err);
      return new CaptureError('internal', `the snapshot source failed: ${message}`, { cause: err });
    }
    return fsStorageError(err, 'put', final, this.root);
  }

  /** Writes a small file through tmp + fsync + rename. */
  async #writeAtomic(final: string, body: string, op: FsOp): Promise<void> {
    const dir = dirname(final);
    // `.<captureId>.manifest.json.<random>.tmp`: remove() finds it by the capture id.
    const tmp = join(dir, `.${basename(final)}.${tempSuffix()}.tmp`);
    const created = new CreatedDirs();
    let leftover: string | undefined;
    try {
      const handle = await openInDir(dir, tmp, FILE_MODE, created);
      leftover = tmp;
      try {
        await handle.writeFile(body);
        await handle.sync();
      } finally {
        await handle.close();
      }
      await rename(tmp, final);
      leftover = final;
      await syncDir(dir);
      leftover = undefined;
    } catch (err) {
      if (leftover !== undefined) await unlinkIfPresent(leftover).catch(() => {});
      await created.prune(dir);
      throw fsStorageError(err, op, final, this.root);
    }
  }
}

/** A filesystem sink rooted at `dir` (kind 'file'). */
export function createFileSink(options: FileSinkOptions): FileSink {
  return new FileSink(options);
}
