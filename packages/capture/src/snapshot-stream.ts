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
 *
 * Spill writes are synchronous, on purpose. Each is ~100 KiB into the page
 * cache (tens of microseconds). Queued async writes each hold their chunk
 * until the threadpool gets to them: under load the bench saw 137-235 MB of
 * such chunks on top of a 32 MiB ceiling. A synchronous write frees the chunk
 * at once, so memory stays bounded by the ceiling whatever the snapshot size.
 *
 * Bytes are copied into fixed blocks (1 MiB, or the ceiling when smaller) from
 * a pool (chunk-pool.ts): the transport reuses its read buffer, and the sink
 * gives each block back (`release`) once it has consumed it, so a capture allocates a few
 * dozen blocks, not one Buffer per chunk. Blocks go downstream when full (or
 * at the end), which also means 10-16× fewer, larger chunks for every stage
 * after it (digest, summary, gzip, upload). Spilled bytes are staged in a block
 * too and written a block at a time.
 */
import { closeSync, openSync, read, unlinkSync, writeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { Readable } from 'node:stream';
import { BlockPool } from './chunk-pool.ts';
import { CaptureError } from './errors.ts';

export interface SnapshotStreamOptions {
  /** Bytes held in memory before spilling to disk (default 16 MiB). */
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

const DEFAULT_CEILING = 16 * 1024 * 1024;
/** Block size: large enough that every stage downstream sees few chunks, small enough to bound memory. */
const BLOCK_BYTES = 1024 * 1024;
/** Free blocks kept beyond the ceiling's worth: what the stages downstream hold at once. */
const SPARE_BLOCKS = 8;

/** A block being filled, and how much of it is used. */
interface Fill {
  block: Buffer | undefined;
  len: number;
}

/** A Readable of snapshot JSON bytes with a bounded memory buffer that spills to a temp file. */
export class SnapshotStream extends Readable {
  readonly #ceiling: number;
  readonly #spillDir: string;
  readonly #pool: BlockPool;
  /** Filled blocks (views), oldest first; older than anything spilled. */
  #mem: Buffer[] = [];
  /** Bytes in #mem and #cur. */
  #memBytes = 0;
  /** The block being filled in memory mode. */
  readonly #cur: Fill = { block: undefined, len: 0 };
  #spilling = false;
  /** The spill file's descriptor, opened on the first spill. */
  #fd: number | undefined;
  /** Bytes written to the spill file since the last return to memory. */
  #written = 0;
  /** Spilled bytes not yet written (newer than the file's). */
  readonly #stage: Fill = { block: undefined, len: 0 };
  #readPos = 0;
  #readInFlight = false;
  #wantsData = false;
  #producerDone = false;
  readonly stats: SnapshotStreamStats = { bytes: 0, chunks: 0, spilledBytes: 0, peakMemoryBytes: 0 };

  constructor(options: SnapshotStreamOptions = {}) {
    super({ highWaterMark: 1024 * 1024 });
    this.#ceiling = options.memoryCeilingBytes ?? DEFAULT_CEILING;
    this.#spillDir = options.spillDir ?? tmpdir();
    const blockSize = Math.max(1, Math.min(BLOCK_BYTES, this.#ceiling));
    this.#pool = new BlockPool(blockSize, Math.ceil(this.#ceiling / blockSize) + SPARE_BLOCKS);
  }

  /** Blocks allocated so far (the rest of the chunks reused blocks the sink gave back). */
  get blocksAllocated(): number {
    return this.#pool.allocated;
  }

  /**
   * Add a chunk (bytes, or text stored as UTF-8). The bytes are copied: the
   * caller may reuse its buffer as soon as this returns.
   * Synchronous and never blocks: called from the transport's read handler.
   */
  pushChunk(chunk: Buffer | string): void {
    if (this.destroyed || this.#producerDone) return;
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
    const length = bytes.length;
    this.stats.bytes += length;
    this.stats.chunks += 1;
    if (!this.#spilling && this.#memBytes + length <= this.#ceiling) {
      this.#toMemory(bytes);
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

  /**
   * `chunk` (one this stream pushed) is consumed: its block may be refilled.
   * Anything else, or a chunk given back twice, is ignored.
   */
  release(chunk: Uint8Array): void {
    this.#pool.giveBack(chunk.buffer);
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
    this.#cur.block = this.#stage.block = undefined;
    this.#pool.close();
    const fd = this.#fd;
    this.#fd = undefined;
    if (fd !== undefined && !this.#readInFlight) closeQuietly(fd);
    else if (fd !== undefined) this.#closeAfterRead = fd;
    callback(err);
  }

  /** A spill read in flight owns the fd until it returns; it closes it then. */
  #closeAfterRead: number | undefined;

  /** Copies into the current block; full blocks join the queue. */
  #toMemory(bytes: Buffer): void {
    this.#append(this.#cur, bytes, () => this.#sealCurrent());
  }

  /** Copies `bytes` into `fill`'s block (one from the pool when it has none); `full` takes each block that fills up. */
  #append(fill: Fill, bytes: Buffer, full: () => void): void {
    for (let from = 0; from < bytes.length; ) {
      const block = (fill.block ??= this.#pool.take());
      const n = bytes.copy(block, fill.len, from);
      from += n;
      fill.len += n;
      if (fill.len === block.length) full();
    }
  }

  /** The current block (older than anything that follows) joins the queue as it is. */
  #sealCurrent(): void {
    const { block, len } = this.#cur;
    if (block === undefined) return;
    if (len > 0) this.#mem.push(this.#pool.lend(block, len));
    else this.#pool.put(block);
    this.#cur.block = undefined;
    this.#cur.len = 0;
  }

  #spill(bytes: Buffer): void {
    if (!this.#spilling) {
      // Memory holds older bytes than the spill: its partial block is final now.
      this.#sealCurrent();
      this.#spilling = true;
    }
    this.#fd ??= this.#openSpillFile();
    this.#append(this.#stage, bytes, () => this.#flushStage());
    this.stats.spilledBytes += bytes.length;
  }

  /** Writes the staged bytes at the end of the spill file; the block is reused. */
  #flushStage(): void {
    const { block, len } = this.#stage;
    const fd = this.#fd;
    if (block === undefined || fd === undefined || len === 0) return;
    let written = 0;
    while (written < len) {
      written += writeSync(fd, block, written, len - written, this.#written + written);
    }
    this.#written += len;
    this.#stage.len = 0;
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
        if (this.#readInFlight) return;
        // Caught up with the file: the staged bytes are the newest spilled ones. Then back to memory,
        // reusing the file from the start.
        const { block: stage, len: staged } = this.#stage;
        this.#stage.block = undefined;
        this.#stage.len = 0;
        this.#spilling = false;
        this.#readPos = this.#written = 0;
        if (stage !== undefined && staged > 0) {
          this.#wantsData = this.push(this.#pool.lend(stage, staged));
          continue;
        }
        if (stage !== undefined) this.#pool.put(stage);
      }
      if (this.#producerDone) {
        if (this.#cur.len > 0) {
          // The last, partial block (its bytes stay counted until it is pushed).
          this.#sealCurrent();
          continue;
        }
        this.push(null);
        this.#wantsData = false;
        this.#pool.close();
      }
      return;
    }
  }

  #readSpill(): void {
    const fd = this.#fd;
    if (this.#readInFlight || fd === undefined) return;
    this.#readInFlight = true;
    const from = this.#readPos;
    const buf = this.#pool.take();
    const length = Math.min(buf.length, this.#written - from);
    const done = (): void => {
      this.#readInFlight = false;
      if (this.#closeAfterRead !== undefined) {
        closeQuietly(this.#closeAfterRead);
        this.#closeAfterRead = undefined;
      }
    };
    const onRead = (got: number): void => {
      done();
      if (this.destroyed) return;
      this.#readPos = from + got;
      this.#wantsData = this.push(this.#pool.lend(buf, got));
      this.#drain();
    };
    const readMore = (got: number): void => {
      read(fd, buf, got, length - got, from + got, (err, n) => {
        if (err !== null || n === 0) {
          done();
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
