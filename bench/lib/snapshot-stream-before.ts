/**
 * The engine's SnapshotStream as it was before issue 14 part 2 (one Buffer per
 * chunk, no block pool): the "before" side of bench/capturer-cpu.ts.
 *
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
 *
 * Spill writes are synchronous, on purpose. Each is ~100 KiB into the page
 * cache (tens of microseconds). Queued async writes each hold their chunk
 * until the threadpool gets to them: under load the bench saw 137-235 MB of
 * such chunks on top of a 32 MiB ceiling. A synchronous write frees the chunk
 * at once, so memory stays bounded by the ceiling whatever the snapshot size.
 */
import { closeSync, openSync, read, unlinkSync, writeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { Readable } from 'node:stream';
import { CaptureError } from '@heapcap/capture';

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
  /** The spill file's descriptor, opened on the first spill. */
  #fd: number | undefined;
  /** Bytes written to the spill file since the last return to memory. */
  #written = 0;
  #readPos = 0;
  #readInFlight = false;
  #wantsData = false;
  #producerDone = false;
  readonly stats: SnapshotStreamStats = { bytes: 0, chunks: 0, spilledBytes: 0, peakMemoryBytes: 0 };

  constructor(options: SnapshotStreamOptions = {}) {
    super({ highWaterMark: 1024 * 1024 });
    this.#ceiling = options.memoryCeilingBytes ?? DEFAULT_CEILING;
    this.#spillDir = options.spillDir ?? tmpdir();
  }

  /**
   * Add a chunk (bytes, which the stream now owns, or text, stored as UTF-8).
   * Synchronous and never blocks: called from the WebSocket message handler.
   */
  pushChunk(chunk: Buffer | string): void {
    if (this.destroyed || this.#producerDone) return;
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
    const length = bytes.length;
    this.stats.bytes += length;
    this.stats.chunks += 1;
    if (!this.#spilling && this.#memBytes + length <= this.#ceiling) {
      this.#mem.push(bytes);
      this.#memBytes += length;
      if (this.#memBytes > this.stats.peakMemoryBytes) this.stats.peakMemoryBytes = this.#memBytes;
    } else {
      try {
        this.#spill(bytes);
      } catch (err) {
        this.destroy(spillError(err, this.#spillDir));
        return;
      }
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
    const fd = this.#fd;
    this.#fd = undefined;
    if (fd !== undefined && !this.#readInFlight) closeQuietly(fd);
    else if (fd !== undefined) this.#closeAfterRead = fd;
    callback(err);
  }

  /** A spill read in flight owns the fd until it returns; it closes it then. */
  #closeAfterRead: number | undefined;

  #spill(buf: Buffer): void {
    this.#spilling = true;
    this.#fd ??= this.#openSpillFile();
    const length = buf.length;
    let written = 0;
    while (written < length) {
      written += writeSync(this.#fd, buf, written, length - written, this.#written + written);
    }
    this.#written += length;
    this.stats.spilledBytes += length;
  }

  #openSpillFile(): number {
    const path = join(this.#spillDir, `heapcap-spill-${process.pid}-${randomBytes(6).toString('hex')}`);
    const fd = openSync(path, 'wx+', 0o600);
    // Unlinked at once: the data lives as long as the fd, and a crash leaves no file behind.
    unlinkSync(path);
    return fd;
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
        // Caught up with everything spilled: back to memory, reuse the file from the start.
        this.#spilling = false;
        this.#readPos = this.#written = 0;
      }
      if (this.#producerDone) {
        this.push(null);
        this.#wantsData = false;
      }
      return;
    }
  }

  #readSpill(): void {
    const fd = this.#fd;
    if (this.#readInFlight || fd === undefined) return;
    this.#readInFlight = true;
    const from = this.#readPos;
    const length = Math.min(SPILL_READ_BYTES, this.#written - from);
    const buf = Buffer.allocUnsafe(length);
    const onRead = (got: number): void => {
      this.#readInFlight = false;
      if (this.#closeAfterRead !== undefined) {
        closeQuietly(this.#closeAfterRead);
        this.#closeAfterRead = undefined;
      }
      if (this.destroyed) return;
      this.#readPos = from + got;
      this.#wantsData = this.push(got === length ? buf : buf.subarray(0, got));
      this.#drain();
    };
    const readMore = (got: number): void => {
      read(fd, buf, got, length - got, from + got, (err, n) => {
        if (err !== null || n === 0) {
          this.#readInFlight = false;
          if (this.#closeAfterRead !== undefined) {
            closeQuietly(this.#closeAfterRead);
            this.#closeAfterRead = undefined;
          }
          this.destroy(spillError(err ?? new Error(`spill file ended at ${from + got} of ${from + length}`), this.#spillDir));
          return;
        }
        if (got + n < length) readMore(got + n);
        else onRead(got + n);
      });
    };
    readMore(0);
  }
}

function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // Already closed: nothing to release.
  }
}

function spillError(err: unknown, dir: string): CaptureError {
  return new CaptureError('storage_failed', `spilling snapshot chunks to ${dir} failed: ${(err as Error).message}`, {
    hint: 'check free space and permissions of the spill directory (--spill-dir), or raise the memory ceiling',
    cause: err,
  });
}
