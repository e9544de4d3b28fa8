/**
 * The snapshot byte stream: a Readable fed synchronously by CDP chunk events.
 *
 * The inspector has no backpressure, so the WebSocket is always drained at
 * line rate: chunks go into an in-memory queue with a fixed ceiling; once the
 * ceiling is reached, further chunks are appended to a spill file until the
 * consumer has caught up with everything spilled, then memory is used again.
 * Order is preserved: memory (older) is always read before the spill file.
 *
 * The spill file is unlinked right after it is created, so nothing is left on
 * disk even if the process dies; its space is freed when the fd closes.
 */
import { open, unlink, type FileHandle } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { Readable } from 'node:stream';
import { CaptureError } from './errors.ts';

export interface SnapshotStreamOptions {
  /** Bytes held in memory before spilling to disk (default 32 MiB). */
  memoryCeilingBytes?: number;
  /** Directory for the spill file (default os.tmpdir()). */
  spillDir?: string;
}

/** Counters describing how the buffer behaved. */
export interface SnapshotStreamStats {
  bytes: number;
  chunks: number;
  spilledBytes: number;
  peakMemoryBytes: number;
}

const DEFAULT_CEILING = 32 * 1024 * 1024;
/** Spill reads are issued in 1 MiB slices: large enough for throughput, small enough to bound memory. */
const SPILL_READ_BYTES = 1024 * 1024;

/** A Readable of snapshot JSON bytes with a bounded memory buffer that spills to a temp file. */
export class SnapshotStream extends Readable {
  readonly #ceiling: number;
  readonly #spillDir: string;
  #mem: Buffer[] = [];
  #memBytes = 0;
  #spilling = false;
  #file: Promise<FileHandle> | undefined;
  /** Bytes reserved in the spill file (writes may still be in flight). */
  #writePos = 0;
  /** Bytes durably written to the spill file, contiguous from 0. */
  #written = 0;
  #readPos = 0;
  #writeChain: Promise<void> = Promise.resolve();
  #readInFlight = false;
  #wantsData = false;
  #producerDone = false;
  readonly stats: SnapshotStreamStats = { bytes: 0, chunks: 0, spilledBytes: 0, peakMemoryBytes: 0 };

  constructor(options: SnapshotStreamOptions = {}) {
    super({ highWaterMark: 1024 * 1024 });
    this.#ceiling = options.memoryCeilingBytes ?? DEFAULT_CEILING;
    this.#spillDir = options.spillDir ?? tmpdir();
  }

  /** Add a chunk. Synchronous and never blocks: called from the WebSocket event handler. */
  pushChunk(text: string): void {
    if (this.destroyed || this.#producerDone) return;
    const buf = Buffer.from(text, 'utf8');
    this.stats.bytes += buf.length;
    this.stats.chunks += 1;
    if (!this.#spilling && this.#memBytes + buf.length <= this.#ceiling) {
      this.#mem.push(buf);
      this.#memBytes += buf.length;
      if (this.#memBytes > this.stats.peakMemoryBytes) this.stats.peakMemoryBytes = this.#memBytes;
    } else {
      this.#spill(buf);
    }
    if (this.#wantsData) this.#drain();
  }

  /** The producer has delivered every chunk (and the engine validated them). */
  finish(): void {
    this.#producerDone = true;
    if (this.#wantsData) this.#drain();
  }

  override _read(): void {
    this.#wantsData = true;
    this.#drain();
  }

  override _destroy(err: Error | null, callback: (error?: Error | null) => void): void {
    this.#mem = [];
    this.#memBytes = 0;
    const file = this.#file;
    this.#file = undefined;
    if (file === undefined) {
      callback(err);
      return;
    }
    // Let queued writes settle before closing the fd they use.
    this.#writeChain
      .catch(() => undefined)
      .then(() => file)
      .then((fh) => fh.close())
      .then(
        () => callback(err),
        () => callback(err),
      );
  }

  #spill(buf: Buffer): void {
    this.#spilling = true;
    const pos = this.#writePos;
    this.#writePos += buf.length;
    this.stats.spilledBytes += buf.length;
    const file = (this.#file ??= this.#openSpillFile());
    this.#writeChain = this.#writeChain
      .then(async () => {
        const fh = await file;
        let off = 0;
        while (off < buf.length) {
          const { bytesWritten } = await fh.write(buf, off, buf.length - off, pos + off);
          off += bytesWritten;
        }
        this.#written = pos + buf.length;
        if (this.#wantsData) this.#drain();
      })
      .catch((err: unknown) => {
        this.destroy(spillError(err, this.#spillDir));
      });
  }

  async #openSpillFile(): Promise<FileHandle> {
    const path = join(this.#spillDir, `heapcap-spill-${process.pid}-${randomBytes(6).toString('hex')}`);
    const fh = await open(path, 'wx+', 0o600);
    // Unlinked at once: the data lives as long as the fd, and a crash leaves no file behind.
    await unlink(path);
    return fh;
  }

  #drain(): void {
    while (this.#wantsData && !this.destroyed) {
      const head = this.#mem.shift();
      if (head !== undefined) {
        this.#memBytes -= head.length;
        this.#wantsData = this.push(head);
        continue;
      }
      if (this.#spilling) {
        if (this.#readPos < this.#written) {
          this.#readSpill();
          return;
        }
        if (this.#readPos === this.#writePos) {
          // Caught up with everything spilled: go back to memory, reuse the file from the start.
          this.#spilling = false;
          this.#readPos = this.#writePos = this.#written = 0;
        } else {
          return; // a write is in flight; its completion drains again
        }
      }
      if (this.#producerDone && this.#mem.length === 0) {
        this.push(null);
        this.#wantsData = false;
      }
      return;
    }
  }

  #readSpill(): void {
    if (this.#readInFlight || this.#file === undefined) return;
    this.#readInFlight = true;
    const from = this.#readPos;
    const length = Math.min(SPILL_READ_BYTES, this.#written - from);
    this.#file
      .then(async (fh) => {
        const buf = Buffer.allocUnsafe(length);
        let got = 0;
        while (got < length) {
          const { bytesRead } = await fh.read(buf, got, length - got, from + got);
          if (bytesRead === 0) throw new Error(`spill file ended at ${from + got} of ${from + length}`);
          got += bytesRead;
        }
        return buf;
      })
      .then(
        (buf) => {
          this.#readInFlight = false;
          if (this.destroyed) return;
          this.#readPos = from + buf.length;
          this.#wantsData = this.push(buf);
          this.#drain();
        },
        (err: unknown) => {
          this.#readInFlight = false;
          this.destroy(spillError(err, this.#spillDir));
        },
      );
  }
}

function spillError(err: unknown, dir: string): CaptureError {
  return new CaptureError('storage_failed', `spilling snapshot chunks to ${dir} failed: ${(err as Error).message}`, {
    hint: 'check free space and permissions of the spill directory (--spill-dir), or raise the memory ceiling',
    cause: err,
  });
}
