/**
 * Reusable blocks for the snapshot's bytes on their way from the transport to
 * the sink, so that a capture allocates a few dozen blocks instead of one new
 * Buffer per chunk.
 *
 * Why: a Buffer's memory is freed only when V8 collects its (tiny) JS object.
 * The capturer allocates little JavaScript per MiB of snapshot, so with a
 * 2 MiB young generation a scavenge came every ~60 MB of chunks, and chunks
 * that waited in the memory buffer were promoted and freed only by a full GC,
 * which V8 starts when external memory has grown by 64 MB. Into MinIO the
 * capturing process peaked at 156-165 MB RSS with 60-75 MB of such dead Buffers
 * (bench/rss.ts); a plain loop that queues 32 MiB of 64 KiB Buffers peaks at
 * 108 MB of ArrayBuffers. Forcing GCs did not bound it (sweeping is lazy).
 *
 * The contract: every block handed downstream is lent. The stage that uses a
 * chunk last (the sink's gzip once it has consumed it, the file write once it
 * completed, the upload's copy into a part) gives it back with the `release`
 * callback the engine hands its consumer (`SnapshotStream#release`), which a
 * store receives in its put options (packages/pipeline/src/run-capture.ts):
 * a parameter, because the store and the engine know nothing of each other.
 * A chunk nobody gives back is simply collected by the GC, so a consumer that
 * keeps chunks (a leak hunt's file write, a test) costs memory as
 * before, never correctness. A stage that keeps bytes past its own callback
 * must copy them (the digest's header, the summary's split strings).
 */

/** Fixed-size blocks, lent downstream and reused when given back. */
export class BlockPool {
  readonly blockSize: number;
  readonly #maxFree: number;
  readonly #free: Buffer[] = [];
  /** Blocks lent out, by their memory: a block is reused only once, however often it is given back. */
  readonly #lent = new Map<ArrayBufferLike, Buffer>();
  #closed = false;
  /** Blocks allocated over the pool's life (the rest were reused). */
  allocated = 0;

  constructor(blockSize: number, maxFree: number) {
    this.blockSize = blockSize;
    this.#maxFree = maxFree;
  }

  /** A block to fill (reused when one was given back). */
  take(): Buffer {
    let block = this.#free.pop();
    if (block === undefined) {
      // Its own ArrayBuffer (not Node's shared pool): giveBack finds the block by it.
      block = Buffer.allocUnsafeSlow(this.blockSize);
      this.allocated += 1;
    }
    return block;
  }

  /** Back into the free list without having been lent (a block the stream did not hand out). */
  put(block: Buffer): void {
    if (!this.#closed && this.#free.length < this.#maxFree) this.#free.push(block);
  }

  /** `block` (or a view of it starting at 0) goes downstream; it comes back through `giveBack`. */
  lend(block: Buffer, length: number): Buffer {
    if (!this.#closed) this.#lent.set(block.buffer, block);
    return length === block.length ? block : block.subarray(0, length);
  }

  /** The block whose memory is `memory` may be refilled; memory this pool did not lend (or lent once already) is ignored. */
  giveBack(memory: ArrayBufferLike): void {
    const block = this.#lent.get(memory);
    if (block === undefined) return;
    this.#lent.delete(memory);
    this.put(block);
  }

  /** Nothing is reused after this (the stream ended); lent blocks are left to the GC. */
  close(): void {
    this.#closed = true;
    this.#free.length = 0;
    this.#lent.clear();
  }
}
