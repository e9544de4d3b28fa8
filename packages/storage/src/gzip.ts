/** The gzip stage every sink puts between the digest and the store. */
import { Gzip, type ZlibOptions } from 'node:zlib';

/**
 * Level 2, chosen by measurement: on a 2-core host the sink shares the second
 * core with the target's inspector thread while the target's main thread
 * serializes on the first, so every CPU-second gzip saves is one the capture
 * does not have to find (or take from the target).
 *
 * bench/gzip-level.ts (Node 20.20, zlib 1.3.1, this 2-core VM, a 221 MB
 * snapshot written by v8.writeHeapSnapshot, 100 KiB chunks like CDP, one core
 * kept busy as the target would, load 5.5; median of 3):
 *
 * | level | sink path (digest+gzip+file) MB per CPU-s | stored vs level 6 |
 * |------:|-----------------------------------------:|------------------:|
 * |     1 |                                      216 |             1.29x |
 * |     2 |                                      217 |             1.25x |
 * |     3 |                                      171 |             1.22x |
 * |     4 |                                      158 |             1.15x |
 * |     5 |                                      131 |             1.02x |
 * |     6 |                                       76 |             1.00x |
 *
 * The same on the heap holder's 175 MB snapshot (gzip alone, 5 runs): level 2
 * 307 MB/CPU-s and 6.83x, level 4 226 MB/CPU-s and 7.33x. Level 2 costs ~27%
 * less CPU than level 4 for ~8% more bytes stored; level 1 is no cheaper and
 * larger. End to end (a 525 MB capture into a directory, load 5-6) the capturer
 * used 3.3-4.0 CPU-s at level 2 against 4.0-6.3 at level 4.
 * memLevel 9 and 64 KiB chunks: no reliable gain.
 *
 * The window, though: Node's zlib is Chromium's, whose fast match finder
 * (hashing with CRC32 instructions) only runs with windows of 8 KiB and more.
 * At 4 KiB (windowBits 12) the classic one runs instead, and on snapshot JSON
 * it is both cheaper and better: gzipSync of the first 200 MB of a 517 MB
 * snapshot (Node 20.20; load ~12 on 2 cores, best of 2, CPU-s per GB of input,
 * ratio): level 2 3.31-3.53 and 5.81×; windowBits 13 2.61 and 6.43×;
 * windowBits 12 2.57 and 6.64×; windowBits 11 2.86 and 7.02×; windowBits 10
 * 3.47 and 7.35×; level 1 at windowBits 12 2.54 and 6.54×. Node 22.23: level 2
 * 3.49 and 5.81×, windowBits 12 2.75 and 6.64×. The output is ordinary gzip
 * (any reader accepts any window) and zlib needs 4 × less memory for it.
 * bench/gzip-level.ts compares the settings.
 *
 * Output in 256 KiB pieces instead of zlib's 16 KiB: each full output buffer
 * is a round trip to libuv's pool and a Buffer, ~4,000 of them per 66 MB of
 * output. The same pipe-transport replay of a 517 MB snapshot (bench/lib/
 * replay-capture.ts, 5 runs alternating, load ~2.5): median 2.48 CPU-s with
 * 16 KiB, 2.18 with 256 KiB (−12%). The bytes are the same either way.
 */
export const SNAPSHOT_GZIP_LEVEL = 2;
/** 4 KiB window: see above. */
export const SNAPSHOT_GZIP_WINDOW_BITS = 12;

/**
 * Gzip that hands each input chunk to `release` once zlib has consumed it: a
 * Transform's callback runs when its chunk is processed, and zlib calls it only
 * once every byte of the chunk is in its window or its output.
 */
class ReleasingGzip extends Gzip {
  readonly #release: (chunk: Uint8Array) => void;

  constructor(options: ZlibOptions, release: (chunk: Uint8Array) => void) {
    super(options);
    this.#release = release;
  }

  override _transform(chunk: Buffer, encoding: BufferEncoding, callback: (error?: Error | null, data?: Buffer) => void): void {
    super._transform(chunk, encoding, (error, data) => {
      // zlib's own flush at the end comes through here with an empty Buffer of its own: not a chunk of ours.
      if (chunk.length > 0) this.#release(chunk);
      callback(error, data);
    });
  }
}

/**
 * A zlib Gzip stream at the level the sink can sustain while the target
 * serializes. With `release` (PutOptions) it gives each input chunk back once
 * consumed: put it after every other stage that reads the uncompressed bytes.
 */
export function createSnapshotGzip(release?: (chunk: Uint8Array) => void): Gzip {
  const options: ZlibOptions = { level: SNAPSHOT_GZIP_LEVEL, windowBits: SNAPSHOT_GZIP_WINDOW_BITS, chunkSize: 256 * 1024 };
  return release === undefined ? new Gzip(options) : new ReleasingGzip(options, release);
}
